//! Stateful operators chained on one thread (DESIGN.md "The operator graph": a forward edge):
//! the output rows of stage i, after the steps between the two, are the input records of stage
//! i + 1. The chain is itself an [`Operator`], so a partition actor runs it as it runs one.
//!
//! Time, as SEMANTICS.md "Several stateful operators (chained)" says (Spark's rule for several
//! stateful operators, SPARK-40925 and SPARK-42376):
//!
//! - **micro-batch**: every stage gets the batch's watermarks (late input: the previous batch's;
//!   eviction: this batch's). The rows a stage emits at the end of a batch (the windows the
//!   eviction watermark finalised) reach the next stage in the same batch, before that stage
//!   ends its batch.
//! - **real-time**: each stage forwards a watermark only after emitting what that watermark
//!   finalised: the rows a stage emits reach the next stage while the next stage still holds
//!   the watermark forwarded before, and only then does it move on. So a downstream stage never
//!   judges an upstream row late because of the watermark that produced it. The stages take the
//!   watermark they are given (stamped); the chain tracks the first stage's event time when the
//!   first stage would have ([`OperatorChain::with_tracker`]).
//! - **an edge that delays time** ([`ChainLink::watermark_delay`]): a stage that can emit rows
//!   older than its input watermark (a stream-stream join with a time range: a row it kept may
//!   match one arriving later) forwards a watermark held back by that delay (SPARK-42376: each
//!   stateful operator's output watermark; [`crate::operator::TimeRange::forwarded_watermark_delay`]).
//!   The stage after it gets, in micro-batch, the batch's two watermarks each moved back by the
//!   delay (late input: batch N-1's, eviction: batch N's, as Spark propagates both), and in
//!   real-time the forwarded watermark moved back by it. Delays add up along the chain.
//!
//! What stages after the first drop as late or refuse, and what the steps between stages fail on,
//! is counted by reason ([`Operator::dropped_between_stages`], exported per partition actor
//! as `eddy_chain_rows_dropped_total{reason="late"|"failed"}`). Late rows are not sent to the
//! late sink, whose columns are the query's input (Spark counts a downstream operator's late
//! rows in its metrics only). A row the steps between stages fail on (an expression's error,
//! which Spark would fail the query on) or a later stage refuses (an integer sum leaving
//! BIGINT) goes to the dead letters as any record whose expression fails (SQL.md "Errors while
//! evaluating"): [`Output::dead_letters`], `"source": "query.sql"`, the row as that stage's
//! steps or operator were given it, with its column names ([`ChainLink::row_names`],
//! [`ChainLink::record_names`]). Rows a filter between stages does not keep (a HAVING, an outer
//! WHERE) are filtered, not dropped, and not counted.
//!
//! The snapshot holds every stage's snapshot ([`OperatorChain::snapshot`]): a header line, then
//! each stage's bytes with their length.
//!
//! **Exchange** (DESIGN.md "The operator graph": an exchange edge): a link whose group key does
//! not hold the routing key of the stage before it is marked [`ChainLink::exchange`]. Split there
//! ([`OperatorChain::split_at_exchange`], when several partition actors run the chain), the
//! chain runs the stages before the exchange as usual, but the rows reaching the exchange link
//! go, after its steps, to an outbox ([`OperatorChain::take_exchanged`]) instead of its operator:
//! the runtime routes each by the hash of the link's key ([`OperatorChain::exchange_key`]) to the
//! partition actor owning it, which hands it to [`OperatorChain::on_exchanged`]; once every
//! peer's rows of the batch are in, [`OperatorChain::end_exchanged`] ends the batch of the
//! stages from the exchange on. The snapshot is the same either way: the exchange link's state
//! is keyed by its own key, which a re-split routes as the runtime routes its input rows.
//!
//! Split in **real-time** mode, the rows reaching the exchange are taken as they are emitted,
//! and the watermark the stage before the exchange forwards (after the rows it finalised) is
//! noted ([`OperatorChain::exchange_watermark`]) for the runtime to send every peer after those
//! rows; the stages from the exchange on move to the minimum over the peers' watermarks
//! ([`OperatorChain::advance_exchanged`]). They move with the clock on this partition actor.

use std::sync::Arc;

use super::{BatchContext, Mode, Operator, Output, StageDrops, StateError};
use crate::output::{row_to_json_line, write_string};
use crate::steps::{Applied, CompiledSteps};
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, KeyValue, Record, Row, Value};
use crate::watermark::BatchWatermarks;
use crate::watermark::WatermarkTracker;

/// The first bytes of a chain's snapshot (then a JSON header line and the stages' bytes).
const MAGIC: &[u8] = b"eddy-operator-chain/1\n";

/// A stage after the first: the steps its input rows go through, then the operator.
pub struct ChainLink {
    /// Run on each row of the stage before (the upstream query's HAVING and select list, this
    /// stage's projection and filters); a row they fail on is counted and dropped.
    pub steps: Arc<CompiledSteps>,
    /// The stage's operator (built stamped: its watermark comes from the chain).
    pub operator: Box<dyn Operator>,
    /// Where the first stage's routing key sits in this stage's group key: when every routing
    /// column reaches this stage's key unchanged, the positions (in routing-key order), so that
    /// a re-split across a change of `parallelism` keeps the groups of the routing keys a
    /// partition actor owns; `None` when it does not (then the chain must run in one partition
    /// actor, and [`Operator::retain_groups`] keeps every group of this stage). An exchange
    /// link's positions are its whole group key (`0..n`): its groups are routed by their own key.
    pub routing_positions: Option<Vec<usize>>,
    /// Whether the edge into this stage is an exchange: its group key does not hold the routing
    /// key of the stage before, so its input rows are re-keyed by its own key (see the module
    /// documentation).
    pub exchange: bool,
    /// The column names of the rows of the stage before (what `steps` read): a dead letter of
    /// a row the steps fail on is written with them.
    pub row_names: Arc<[String]>,
    /// The column names of this stage's input records (what `steps` give `operator`): a dead
    /// letter of a record the operator refuses is written with them.
    pub record_names: Arc<[String]>,
    /// How far (µs, >= 0) the watermark this stage is given lags the one the stage before it
    /// was given: zero after an aggregation (it never emits a row older than its watermark),
    /// the join's [`crate::operator::TimeRange::forwarded_watermark_delay`] after a
    /// stream-stream join (see the module documentation).
    pub watermark_delay: Duration,
}

impl std::fmt::Debug for ChainLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainLink")
            .field("steps", &self.steps)
            .field("operator", &self.operator)
            .field("routing_positions", &self.routing_positions)
            .field("exchange", &self.exchange)
            .field("watermark_delay", &self.watermark_delay)
            .finish()
    }
}

/// Stateful operators run one after the other on one thread (see the module documentation).
#[derive(Debug)]
pub struct OperatorChain {
    mode: Mode,
    first: Box<dyn Operator>,
    links: Vec<ChainLink>,
    /// Real-time: the first stage's event-time column and its tracker, when the watermark comes
    /// from the records the chain sees (one source) rather than only from the one it is given.
    tracker: Option<(usize, WatermarkTracker)>,
    /// Real-time: the watermark each link's operator holds (the last one forwarded to it).
    forwarded: Vec<Timestamp>,
    /// One output buffer per link (rows of the stage before it).
    buffers: Vec<Output>,
    /// Rows dropped after the first stage (see the module documentation).
    dropped: StageDrops,
    /// Split at an exchange: the index of the exchange link, whose input rows go to `outbox`.
    split: Option<usize>,
    /// Split: the exchange link's input records (after its steps) not yet taken.
    outbox: Vec<Record>,
    /// Split, real-time: the watermark forwarded to the exchange (after the rows it finalised).
    at_exchange: Timestamp,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    tracker: Option<WatermarkTracker>,
    forwarded: Vec<Timestamp>,
    stages: Vec<usize>,
}

impl OperatorChain {
    /// A chain of `first`, then each link in order. Every operator must be built for `mode`;
    /// those after the first, and the first too when [`OperatorChain::with_tracker`] is used,
    /// with a stamped watermark (they must not track event time themselves).
    pub fn new(mode: Mode, first: Box<dyn Operator>, links: Vec<ChainLink>) -> OperatorChain {
        let n = links.len();
        OperatorChain {
            mode,
            first,
            links,
            tracker: None,
            forwarded: vec![Timestamp::MIN; n],
            buffers: (0..n).map(|_| Output::default()).collect(),
            dropped: StageDrops::default(),
            split: None,
            outbox: Vec::new(),
            at_exchange: Timestamp::MIN,
        }
    }

    /// Whether a link's input is exchanged between partition actors (a stage keyed otherwise
    /// than the one before it).
    pub fn has_exchange(&self) -> bool {
        self.links.iter().any(|l| l.exchange)
    }

    /// Splits the chain at its first exchange link (see the module documentation), for a run
    /// over several partition actors (either mode); `false` (and nothing changes) when it has
    /// none. From then on [`Operator::end_batch`] ends the stages before the exchange only, and
    /// in real-time mode the watermark stops at the exchange.
    pub fn split_at_exchange(&mut self) -> bool {
        self.split = self.links.iter().position(|l| l.exchange);
        self.split.is_some()
    }

    /// The columns of the exchange link's input records that key its state, in order: split,
    /// the runtime routes each record by their hash. Empty without an exchange link.
    pub fn exchange_key(&self) -> &[usize] {
        self.links.iter().find(|l| l.exchange).map_or(&[], |l| l.operator.key_columns())
    }

    /// Split: takes the records that reached the exchange since the last call (in the order
    /// they were emitted), for the runtime to route; empty when the chain is not split.
    pub fn take_exchanged(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.outbox)
    }

    /// Split: one record routed to this partition actor across the exchange (from any peer,
    /// itself included), given to the exchange link's operator; the rows it leads to go down
    /// the chain, the last stage's to `out`. Does nothing when the chain is not split.
    pub fn on_exchanged(&mut self, record: &Record, out: &mut Output) {
        let Some(i) = self.split else { return };
        let mut moved = std::mem::take(&mut self.buffers[i]);
        moved.clear();
        self.links[i].operator.on_record(record, self.forwarded[i], &mut moved);
        self.dropped.add(&moved);
        refused_to_dead_letters(&self.links[i].record_names, &mut moved, out);
        let mut rows = std::mem::take(&mut moved.rows);
        self.push_down(i + 1, &mut rows, None, out);
        moved.rows = rows;
        moved.clear();
        self.buffers[i] = moved;
    }

    /// Split, real-time: the watermark the stage before the exchange has forwarded to it, after
    /// the rows that watermark finalised (those are already in the outbox,
    /// [`OperatorChain::take_exchanged`]); [`Timestamp::MIN`] before any, or when not split.
    pub fn exchange_watermark(&self) -> Timestamp {
        self.at_exchange
    }

    /// Split, real-time: moves the stages from the exchange on to watermark `w` (the minimum
    /// over every partition actor's [`OperatorChain::exchange_watermark`] received so far),
    /// each after the rows of the stage before it, the last stage's rows going to `out`. Does
    /// nothing when `w` is not above the watermark the exchange link holds, or when the chain
    /// is not split.
    pub fn advance_exchanged(&mut self, w: Timestamp, out: &mut Output) {
        let Some(i) = self.split else { return };
        if w <= self.forwarded[i] {
            return;
        }
        let mut moved = std::mem::take(&mut self.buffers[i]);
        moved.clear();
        self.links[i].operator.advance_watermark(w, &mut moved);
        self.forwarded[i] = w;
        self.dropped.add(&moved);
        refused_to_dead_letters(&self.links[i].record_names, &mut moved, out);
        let mut rows = std::mem::take(&mut moved.rows);
        self.push_down(i + 1, &mut rows, Some(w), out);
        moved.rows = rows;
        moved.clear();
        self.buffers[i] = moved;
    }

    /// Split, micro-batch: ends the batch of the stages from the exchange on, once every
    /// peer's records of the batch went through [`OperatorChain::on_exchanged`]. Does nothing
    /// when the chain is not split.
    pub fn end_exchanged(&mut self, out: &mut Output) {
        if let Some(i) = self.split {
            self.end_links(i, self.links.len(), out);
        }
    }

    /// Real-time: the chain's watermark also follows the event times of column `column` of the
    /// records it is given, `delay` behind the largest (as a single operator's own tracker:
    /// one source).
    pub fn with_tracker(mut self, column: usize, delay: crate::time::Duration) -> OperatorChain {
        self.tracker = Some((column, WatermarkTracker::new(delay)));
        self
    }

    /// The number of stages (the first included).
    pub fn stages(&self) -> usize {
        1 + self.links.len()
    }

    /// The watermark the chain holds (real-time): what it was given or tracked.
    fn tracked(&self) -> Timestamp {
        self.tracker.map_or(Timestamp::MIN, |(_, t)| t.current())
    }

    /// Moves the rows of stage `from` (0: the first) down the chain: through link `from`'s
    /// steps into its operator, then that operator's rows further, and so on; the last stage's
    /// rows go to `out`. `forward`: the watermark to move every link from `from` on to once it
    /// has taken the rows of the stage before it (real-time; `None` in micro-batch, or to leave
    /// the watermarks as they are).
    fn push_down(&mut self, from: usize, rows: &mut Vec<Row>, forward: Option<Timestamp>, out: &mut Output) {
        if from == self.links.len() {
            out.rows.append(rows);
            return;
        }
        // the watermark this link is given: the one forwarded to the stage before, held back by
        // the edge's delay (across an exchange too: the peers take it as sent)
        let forward = forward.map(|f| f.saturating_sub(self.links[from].watermark_delay));
        if Some(from) == self.split {
            let steps = &self.links[from].steps;
            for row in rows.drain(..) {
                match steps.apply(Record::new(row)) {
                    Applied::Keep(record) => self.outbox.push(record),
                    Applied::Drop => {}
                    Applied::Failed { reason, input } => {
                        self.dropped.failed += 1;
                        out.dead_letters.push(dead_letter(&self.links[from].row_names, &input.values, &reason));
                    }
                }
            }
            if let Some(f) = forward {
                self.at_exchange = self.at_exchange.max(f);
            }
            return;
        }
        let mut moved = std::mem::take(&mut self.buffers[from]);
        moved.clear();
        let link = &mut self.links[from];
        let w = self.forwarded[from];
        for row in rows.drain(..) {
            match link.steps.apply(Record::new(row)) {
                Applied::Keep(record) => link.operator.on_record(&record, w, &mut moved),
                Applied::Drop => {}
                Applied::Failed { reason, input } => {
                    self.dropped.failed += 1;
                    out.dead_letters.push(dead_letter(&link.row_names, &input.values, &reason));
                }
            }
        }
        if let Some(f) = forward
            && f > w
        {
            link.operator.advance_watermark(f, &mut moved);
            self.forwarded[from] = f;
        }
        self.dropped.add(&moved);
        refused_to_dead_letters(&link.record_names, &mut moved, out);
        let mut next = std::mem::take(&mut moved.rows);
        self.push_down(from + 1, &mut next, forward, out);
        moved.rows = next;
        moved.clear();
        self.buffers[from] = moved;
    }

    /// Micro-batch: ends the batch of the links `from..to`, in order, each after it took the
    /// rows of the stage before it.
    fn end_links(&mut self, from: usize, to: usize, out: &mut Output) {
        for i in from..to {
            let mut moved = std::mem::take(&mut self.buffers[i]);
            moved.clear();
            self.links[i].operator.end_batch(&mut moved);
            self.dropped.add(&moved);
            refused_to_dead_letters(&self.links[i].record_names, &mut moved, out);
            let mut rows = std::mem::take(&mut moved.rows);
            self.push_down(i + 1, &mut rows, None, out);
            moved.rows = rows;
            moved.clear();
            self.buffers[i] = moved;
        }
    }

    /// Takes the first stage's new rows out of `out` and sends them down the chain; its late
    /// and refused records stay in `out` (they are the query's input).
    fn push_first_rows(&mut self, out: &mut Output, start: usize, forward: Option<Timestamp>) {
        if self.links.is_empty() {
            return;
        }
        let mut rows: Vec<Row> = out.rows.drain(start..).collect();
        self.push_down(0, &mut rows, forward, out);
    }
}

impl Operator for OperatorChain {
    /// Every stage: a stage of no group key after the first is fed by an exchange on the empty
    /// key, which sends every row to the same partition actor as the router does.
    fn own_global_group(&mut self) {
        self.first.own_global_group();
        for l in &mut self.links {
            l.operator.own_global_group();
        }
    }

    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.first.begin_batch(ctx);
        let mut watermarks = ctx.watermarks;
        for l in &mut self.links {
            watermarks = held_back(watermarks, l.watermark_delay);
            l.operator.begin_batch(&BatchContext { watermarks, ..*ctx });
        }
    }

    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        let start = out.rows.len();
        match self.mode {
            Mode::MicroBatch => {
                self.first.on_record(record, watermark, out);
                self.push_first_rows(out, start, None);
            }
            Mode::RealTime => {
                // as the first stage would with its own tracker: judged against the watermark as
                // it stood, then the record's event time counts
                let before = watermark.max(self.tracked());
                self.first.on_record(record, before, out);
                let mut after = before;
                if let Some((c, t)) = self.tracker.as_mut()
                    && let Some(time) = record.values.get(*c).and_then(|v| v.as_timestamp())
                {
                    t.observe(time);
                    after = after.max(t.current());
                    if after > before {
                        self.first.advance_watermark(after, out);
                    }
                }
                self.push_first_rows(out, start, Some(after));
            }
        }
    }

    fn prefetch(&self, record: &Record) {
        self.first.prefetch(record);
    }

    fn prefetch_pays(&self) -> bool {
        self.first.prefetch_pays()
    }

    fn key_columns(&self) -> &[usize] {
        self.first.key_columns()
    }

    fn end_batch(&mut self, out: &mut Output) {
        let start = out.rows.len();
        self.first.end_batch(out);
        self.push_first_rows(out, start, None);
        // split: the stages from the exchange on end in `end_exchanged`
        self.end_links(0, self.split.unwrap_or(self.links.len()), out);
    }

    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output) {
        let start = out.rows.len();
        self.first.advance_watermark(w, out);
        let w = w.max(self.tracked());
        self.push_first_rows(out, start, Some(w));
    }

    fn advance_clock(&mut self, now: Timestamp, out: &mut Output) {
        let start = out.rows.len();
        self.first.advance_clock(now, out);
        self.push_first_rows(out, start, None);
        for i in 0..self.links.len() {
            if Some(i) == self.split && self.mode == Mode::MicroBatch {
                // the stages from the exchange on move with the rows exchanged (in real-time
                // mode they move with this partition actor's clock)
                break;
            }
            let mut moved = std::mem::take(&mut self.buffers[i]);
            moved.clear();
            self.links[i].operator.advance_clock(now, &mut moved);
            let mut rows = std::mem::take(&mut moved.rows);
            self.push_down(i + 1, &mut rows, None, out);
            moved.rows = rows;
            moved.clear();
            self.buffers[i] = moved;
        }
    }

    fn next_timer(&self) -> Option<Timestamp> {
        std::iter::once(self.first.next_timer())
            .chain(self.links.iter().map(|l| l.operator.next_timer()))
            .flatten()
            .min()
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        let mut w = BatchWatermarks { late: evicted_with, evict: next };
        self.first.wants_no_data_batch(evicted_with, next)
            || self.links.iter().any(|l| {
                w = held_back(w, l.watermark_delay);
                l.operator.wants_no_data_batch(w.late, w.evict)
            })
    }

    /// Rows dropped after the first stage since this chain was built: late at a later stage,
    /// or refused by it or failed by the steps between stages.
    fn dropped_between_stages(&self) -> StageDrops {
        self.dropped
    }

    fn state_len(&self) -> usize {
        self.first.state_len() + self.links.iter().map(|l| l.operator.state_len()).sum::<usize>()
    }

    /// `eddy-operator-chain/1`, a JSON header line (the tracker, the forwarded watermarks, each
    /// stage's byte length), then each stage's snapshot, first stage first.
    fn snapshot(&self) -> Vec<u8> {
        let stages: Vec<Vec<u8>> =
            std::iter::once(self.first.snapshot()).chain(self.links.iter().map(|l| l.operator.snapshot())).collect();
        let header = Header {
            tracker: self.tracker.map(|(_, t)| t),
            forwarded: self.forwarded.clone(),
            stages: stages.iter().map(Vec::len).collect(),
        };
        let mut bytes = MAGIC.to_vec();
        bytes.extend(serde_json::to_vec(&header).unwrap_or_default());
        bytes.push(b'\n');
        for s in stages {
            bytes.extend(s);
        }
        bytes
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.restore_keeping(bytes, &mut |_| true)
    }

    fn restore_keeping(&mut self, bytes: &[u8], keep: &mut dyn FnMut(&GroupKey) -> bool) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "operator_chain", why };
        let rest = bytes.strip_prefix(MAGIC).ok_or_else(|| corrupt("not a chain's snapshot".into()))?;
        let line = rest.iter().position(|&b| b == b'\n').ok_or_else(|| corrupt("no header line".into()))?;
        let header: Header = serde_json::from_slice(&rest[..line]).map_err(|e| corrupt(e.to_string()))?;
        if header.stages.len() != self.stages() || header.forwarded.len() != self.links.len() {
            return Err(corrupt(format!(
                "{} stages in the snapshot, {} in the query",
                header.stages.len(),
                self.stages()
            )));
        }
        let mut body = &rest[line + 1..];
        let mut parts = Vec::with_capacity(header.stages.len());
        for &n in &header.stages {
            if n > body.len() {
                return Err(corrupt(format!("a stage of {n} bytes where {} remain", body.len())));
            }
            let (part, tail) = body.split_at(n);
            parts.push(part);
            body = tail;
        }
        if !body.is_empty() {
            return Err(corrupt(format!("{} bytes after the last stage", body.len())));
        }
        self.first.restore_keeping(parts[0], keep)?;
        for (link, part) in self.links.iter_mut().zip(&parts[1..]) {
            match &link.routing_positions {
                Some(p) => link.operator.restore_keeping(part, &mut |k| keep(&routing_key(k, p)))?,
                None => link.operator.restore(part)?,
            }
        }
        if let (Some((_, mine)), Some(theirs)) = (self.tracker.as_mut(), header.tracker) {
            mine.merge(&theirs);
        }
        for (f, g) in self.forwarded.iter_mut().zip(header.forwarded) {
            *f = (*f).max(g);
        }
        Ok(())
    }

    fn as_chain_mut(&mut self) -> Option<&mut OperatorChain> {
        Some(self)
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.first.retain_groups(keep);
        for link in &mut self.links {
            if let Some(p) = &link.routing_positions {
                link.operator.retain_groups(&mut |k| keep(&routing_key(k, p)));
            }
        }
    }
}

/// The dead letter of `values` (columns `names`) that a stage after the first could not take,
/// for `reason` (see the module documentation): `{"reason", "source": "query.sql", "record"}`,
/// the record being the JSON line of the columns, as a string (the late sink's form).
fn dead_letter(names: &[String], values: &[Value], reason: &str) -> String {
    let record = row_to_json_line(names, values);
    let mut line = String::with_capacity(record.len() + reason.len() + 48);
    line.push_str("{\"reason\": ");
    write_string(&mut line, reason);
    line.push_str(", \"source\": \"query.sql\", \"record\": ");
    write_string(&mut line, record.trim_end());
    line.push('}');
    line
}

/// Moves the records a stage after the first refused (`moved.rejected`, its input records,
/// columns `names`) to `out`'s dead letters.
fn refused_to_dead_letters(names: &[String], moved: &mut Output, out: &mut Output) {
    for r in moved.rejected.drain(..) {
        out.dead_letters.push(dead_letter(names, &r.record.values, &r.reason));
    }
}

/// A batch's watermarks as the stage after an edge of `delay` gets them: each held back by it.
fn held_back(w: BatchWatermarks, delay: Duration) -> BatchWatermarks {
    BatchWatermarks { late: w.late.saturating_sub(delay), evict: w.evict.saturating_sub(delay) }
}

/// The first stage's routing key inside a later stage's group key `k` (at `positions`).
fn routing_key(k: &GroupKey, positions: &[usize]) -> GroupKey {
    GroupKey(positions.iter().map(|&i| k.0.get(i).cloned().unwrap_or(KeyValue(crate::value::Value::Null))).collect())
}
