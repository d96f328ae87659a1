//! Deduplication (`query.type = "deduplicate"`), SEMANTICS.md "Deduplication".
//!
//! - `within_watermark = false`, as Spark's `dropDuplicates(columns)`: the first record of each
//!   value of `columns` passes. With a watermark, a record whose event time <= W is late (dropped)
//!   whether or not the event-time column is among `columns`; a key's state is kept until W
//!   passes its event time when the event-time column is part of `columns`, forever otherwise.
//! - `within_watermark = true`, as Spark's `dropDuplicatesWithinWatermark(columns)`: a key's state
//!   expires at (first record's event time + watermark delay); later duplicates do not extend it;
//!   once expired (<= W) the key counts as new.
//!
//! Micro-batch: late input is judged against the previous batch's watermark, state is evicted
//! with the current one at the end of the batch (Spark's `StreamingDeduplicateExec`).
//! Real-time: against W as it stood when the record arrived; eviction follows every record.
//! Output rows are the passing records, all columns in schema order.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::{BatchContext, Mode, Operator, Output, StateError, merge_trackers};
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, Record};
use crate::watermark::WatermarkTracker;

/// Configuration of a [`Deduplicate`].
#[derive(Clone, Debug)]
pub struct DeduplicateConfig {
    /// Execution mode.
    pub mode: Mode,
    /// Indexes of the deduplication columns, in order.
    pub key_columns: Vec<usize>,
    /// `dropDuplicatesWithinWatermark` semantics.
    pub within_watermark: bool,
    /// The watermark: event-time column index and delay.
    pub watermark: Option<(usize, Duration)>,
}

/// The deduplication operator (see the module documentation).
#[derive(Debug)]
pub struct Deduplicate {
    cfg: DeduplicateConfig,
    /// Key -> the instant at which W expires it (None: kept forever).
    seen: HashMap<GroupKey, Option<Timestamp>>,
    by_expiry: BTreeMap<Timestamp, Vec<GroupKey>>,
    /// Whether the event-time column is one of the key columns.
    time_in_key: bool,
    tracker: Option<WatermarkTracker>,
    batch: Option<BatchContext>,
    watermark: Timestamp,
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    seen: Vec<(GroupKey, Option<Timestamp>)>,
    tracker: Option<WatermarkTracker>,
    watermark: Timestamp,
}

impl Deduplicate {
    /// With several sources (SEMANTICS.md "Several sources (union)"), the operator's watermark
    /// comes only from the one each record is stamped with (the sources' combined watermark),
    /// never from the event times of the records it sees: one source's records alone would move
    /// it past the others'.
    pub fn with_stamped_watermark(mut self) -> Self {
        self.tracker = None;
        self
    }

    /// A new, empty operator.
    pub fn new(cfg: DeduplicateConfig) -> Deduplicate {
        let time_in_key = cfg.watermark.is_some_and(|(c, _)| cfg.key_columns.contains(&c));
        let tracker = cfg.watermark.map(|(_, d)| WatermarkTracker::new(d));
        Deduplicate {
            cfg,
            seen: HashMap::new(),
            by_expiry: BTreeMap::new(),
            time_in_key,
            tracker,
            batch: None,
            watermark: Timestamp::MIN,
        }
    }

    fn event_time(&self, record: &Record) -> Option<Timestamp> {
        self.cfg.watermark.and_then(|(c, _)| record.values[c].as_timestamp())
    }

    fn process(&mut self, record: &Record, late_w: Timestamp, out: &mut Output) {
        let t = self.event_time(record);
        if let Some(t) = t
            && t <= late_w
        {
            out.late.push(record.clone());
            return;
        }
        let key = GroupKey::of(record, &self.cfg.key_columns);
        if self.seen.contains_key(&key) {
            return;
        }
        let expiry = match (t, self.cfg.watermark) {
            (Some(t), Some((_, delay))) if self.cfg.within_watermark => Some(t.saturating_add(delay)),
            (Some(t), Some(_)) if self.time_in_key => Some(t),
            _ => None,
        };
        if let Some(e) = expiry {
            self.by_expiry.entry(e).or_default().push(key.clone());
        }
        self.seen.insert(key, expiry);
        out.rows.push(record.values.to_vec());
    }

    fn evict(&mut self, w: Timestamp) {
        while let Some(entry) = self.by_expiry.first_entry() {
            if *entry.key() > w {
                break;
            }
            let at = *entry.key();
            for key in entry.remove() {
                if self.seen.get(&key) == Some(&Some(at)) {
                    self.seen.remove(&key);
                }
            }
        }
    }
}

impl Operator for Deduplicate {
    fn key_columns(&self) -> &[usize] {
        &self.cfg.key_columns
    }

    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
    }

    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        match self.cfg.mode {
            Mode::MicroBatch => {
                let late_w = self.batch.map_or(Timestamp::MIN, |b| b.watermarks.late);
                self.process(record, late_w, out);
            }
            Mode::RealTime => {
                self.advance_watermark(watermark, out);
                let t = self.event_time(record);
                let w = self.watermark;
                self.process(record, w, out);
                if let (Some(tr), Some(t)) = (self.tracker.as_mut(), t) {
                    tr.observe(t);
                    let w = tr.current();
                    self.advance_watermark(w, out);
                }
            }
        }
    }

    fn end_batch(&mut self, _out: &mut Output) {
        if let Some(b) = self.batch.take()
            && self.cfg.watermark.is_some()
        {
            self.evict(b.watermarks.evict);
        }
    }

    fn advance_watermark(&mut self, w: Timestamp, _out: &mut Output) {
        if w > self.watermark {
            self.watermark = w;
            self.evict(w);
        }
    }

    fn advance_clock(&mut self, _now: Timestamp, _out: &mut Output) {}

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        self.cfg.watermark.is_some() && next > evicted_with
    }

    fn state_len(&self) -> usize {
        self.seen.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut seen: Vec<_> = self.seen.iter().map(|(k, e)| (k.clone(), *e)).collect();
        seen.sort();
        let snap = Snapshot { seen, tracker: self.tracker, watermark: self.watermark };
        // Serialising plain data to a Vec cannot fail.
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let snap: Snapshot = serde_json::from_slice(bytes)
            .map_err(|e| StateError::Corrupt { operator: "deduplicate", why: e.to_string() })?;
        for (k, e) in snap.seen {
            if let Some(e) = e {
                self.by_expiry.entry(e).or_default().push(k.clone());
            }
            self.seen.insert(k, e);
        }
        merge_trackers(&mut self.tracker, snap.tracker);
        self.watermark = self.watermark.max(snap.watermark);
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.seen.retain(|k, _| keep(k));
        let seen = &self.seen;
        self.by_expiry.retain(|_, keys| {
            keys.retain(|k| seen.contains_key(k));
            !keys.is_empty()
        });
    }
}
