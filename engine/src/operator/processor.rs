//! Custom stateful processors: user code with keyed state and timers, run as an [`Operator`]
//! (Spark's `transformWithState`, `StatefulProcessor`).
//!
//! A [`StatefulProcessor`] sees the records of one key at a time, through a [`KeyContext`] that
//! holds the key's state (named value, list and map states, Spark's `ValueState`, `ListState`
//! and `MapState`, each entry with an optional time to live) and its timers (processing-time and
//! event-time), and emits output rows:
//!
//! - real-time: [`StatefulProcessor::handle_input`] once per record, as it arrives (Spark's
//!   real-time mode calls the handler once per row); a processing-time timer fires once the clock
//!   reaches it ([`Operator::advance_clock`], also with no further input), an event-time timer
//!   once the watermark reaches it ([`Operator::advance_watermark`]; Databricks has no event-time
//!   timers in real-time mode). A timer registered at or before the clock (processing time) or
//!   the watermark (event time) fires right after the call that registered it.
//! - micro-batch: `handle_input` once per key per batch with all of its records, in arrival order,
//!   keys in key order; then the timers due at the batch's processing time and at its eviction
//!   watermark fire (Spark runs expired timers after the batch's input).
//!
//! Timers of one key at one instant and kind are one timer (registering it again changes nothing).
//! Timers fire in (instant, key) order; a timer registered while timers fire fires in the same
//! pass when it is due. A state entry with a time to live (a value, a list element, a map entry)
//! expires `ttl` after it was written, in processing time (as Spark's TTL); an expired entry reads
//! as absent and is dropped with the key's next call.
//!
//! State is checkpointed with the operator's snapshot and re-split by key on restore, as every
//! operator's ([`Operator::restore`], [`Operator::retain_groups`]).
//!
//! A pipeline file reaches a processor registered by name ([`crate::registry::Registry`]) with
//! `[query] type = "processor"`; each partition actor runs its own instance, made at its start
//! ([`StatefulProcessor::init`]) and closed when it ends ([`StatefulProcessor::close`]).

use std::collections::{BTreeMap, BTreeSet};

use std::cell::OnceCell;
use std::hash::{Hash, Hasher};

use hashbrown::{Equivalent, HashMap};
use serde::{Deserialize, Serialize};

use super::{BatchContext, Mode, Operator, Output, StateError};
use crate::schema::Schema;
use crate::time::{Duration, Timestamp};
use crate::value::{GroupKey, KeyValue, Record, Row, Value};

/// Which clock a timer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TimeDomain {
    /// Processing time: fires once the clock (system or replay) reaches its instant.
    ProcessingTime,
    /// Event time: fires once the watermark reaches its instant (watermark >= instant). The
    /// watermark does not move at the end of a finite input, so a timer past the last watermark
    /// does not fire then.
    EventTime,
}

/// One key's state and timers during a handler call, and where its output rows go.
#[derive(Debug)]
pub struct KeyContext<'a> {
    key: KeyOf<'a>,
    state: &'a mut KeyState,
    out: &'a mut Output,
    now: Timestamp,
    watermark: Timestamp,
    /// Timers registered or deleted in this call, applied to the operator's index after it.
    changes: Vec<(bool, TimeDomain, Timestamp)>,
}

/// The key of a handler call: a key already built (held in the state, or a timer's), or the
/// key columns of the record being handled, built into a [`GroupKey`] only if the call asks for
/// it or leaves state behind (a key without state costs no allocation).
#[derive(Debug)]
enum KeyOf<'a> {
    Held(&'a GroupKey),
    Record { record: &'a Record, columns: &'a [usize], built: OnceCell<GroupKey> },
}

impl KeyOf<'_> {
    /// The key, owned.
    fn to_owned_key(&self) -> GroupKey {
        match self {
            KeyOf::Held(key) => (*key).clone(),
            KeyOf::Record { record, columns, built } => {
                built.get().cloned().unwrap_or_else(|| GroupKey::of(record, columns))
            }
        }
    }
}

/// A record's key columns, looked up in a map of [`GroupKey`]s without building one: hashes and
/// compares as the `GroupKey` of those columns would (a boxed slice of [`KeyValue`]s hashes its
/// length, then each part as its [`Value`]).
struct RecordKey<'a> {
    record: &'a Record,
    columns: &'a [usize],
}

impl Hash for RecordKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.columns.len());
        for &c in self.columns {
            self.record.values[c].hash(state);
        }
    }
}

impl Equivalent<GroupKey> for RecordKey<'_> {
    fn equivalent(&self, key: &GroupKey) -> bool {
        key.0.len() == self.columns.len() && key.0.iter().zip(self.columns).all(|(k, &c)| k.0 == self.record.values[c])
    }
}

impl KeyContext<'_> {
    /// The key: the values of the `partition_by` columns, in order.
    pub fn key(&self) -> &GroupKey {
        match &self.key {
            KeyOf::Held(key) => key,
            KeyOf::Record { record, columns, built } => built.get_or_init(|| GroupKey::of(record, columns)),
        }
    }

    /// Processing time now (µs): the clock in real-time mode, the batch's processing time in
    /// micro-batch mode; for a timer's call, the instant it fires at.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The watermark now (event time, µs); `Timestamp::MIN` before any.
    pub fn watermark(&self) -> Timestamp {
        self.watermark
    }

    /// The value state `name` of this key; `None` when never set, cleared, or expired.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self.state.values.get(name) {
            Some((v, expires)) if expires.is_none_or(|e| self.now < e) => Some(v),
            _ => None,
        }
    }

    /// Sets the value state `name` of this key, kept until cleared (`ttl = None`) or until `ttl`
    /// of processing time after now (`now + ttl` reads it as absent).
    pub fn set(&mut self, name: &str, value: Value, ttl: Option<Duration>) {
        let expires = ttl.map(|d| self.now.saturating_add(d));
        self.state.values.insert(name.to_string(), (value, expires));
    }

    /// Clears the value state `name` of this key.
    pub fn clear(&mut self, name: &str) {
        self.state.values.remove(name);
    }

    /// The live elements of the list state `name` of this key, in the order they were added
    /// (empty when never set, cleared, or every element expired).
    pub fn list(&self, name: &str) -> Vec<&Value> {
        let now = self.now;
        self.state
            .lists
            .get(name)
            .map_or_else(Vec::new, |list| list.iter().filter(|(_, e)| live(*e, now)).map(|(v, _)| v).collect())
    }

    /// Appends `value` to the list state `name` of this key; the element alone expires `ttl` of
    /// processing time after now (`None`: kept until cleared), as each element of Spark's
    /// `ListState` has its own time to live.
    pub fn list_append(&mut self, name: &str, value: Value, ttl: Option<Duration>) {
        let expires = ttl.map(|d| self.now.saturating_add(d));
        match self.state.lists.get_mut(name) {
            Some(list) => list.push((value, expires)),
            None => {
                self.state.lists.insert(name.to_string(), vec![(value, expires)]);
            }
        }
    }

    /// Replaces the list state `name` of this key with `values`, each expiring `ttl` after now.
    pub fn list_put(&mut self, name: &str, values: Vec<Value>, ttl: Option<Duration>) {
        let expires = ttl.map(|d| self.now.saturating_add(d));
        if values.is_empty() {
            self.state.lists.remove(name);
        } else {
            self.state.lists.insert(name.to_string(), values.into_iter().map(|v| (v, expires)).collect());
        }
    }

    /// Clears the list state `name` of this key.
    pub fn list_clear(&mut self, name: &str) {
        self.state.lists.remove(name);
    }

    /// The live value under `key` in the map state `name` of this key.
    pub fn map_get(&self, name: &str, key: &Value) -> Option<&Value> {
        let entry = self.state.maps.get(name)?.get(&KeyValue(key.clone()))?;
        live(entry.1, self.now).then_some(&entry.0)
    }

    /// Puts `value` under `key` in the map state `name` of this key (replacing what was there);
    /// the entry expires `ttl` of processing time after now (`None`: kept until removed), as
    /// each entry of Spark's `MapState`. Keys compare as grouping keys (NaN equals NaN).
    pub fn map_put(&mut self, name: &str, key: Value, value: Value, ttl: Option<Duration>) {
        let expires = ttl.map(|d| self.now.saturating_add(d));
        let map = match self.state.maps.get_mut(name) {
            Some(map) => map,
            None => self.state.maps.entry(name.to_string()).or_default(),
        };
        map.insert(KeyValue(key), (value, expires));
    }

    /// Removes `key` from the map state `name` of this key.
    pub fn map_remove(&mut self, name: &str, key: &Value) {
        if let Some(map) = self.state.maps.get_mut(name) {
            map.remove(&KeyValue(key.clone()));
            if map.is_empty() {
                self.state.maps.remove(name);
            }
        }
    }

    /// The live entries of the map state `name` of this key, in key order.
    pub fn map_entries(&self, name: &str) -> Vec<(&Value, &Value)> {
        let now = self.now;
        self.state.maps.get(name).map_or_else(Vec::new, |map| {
            map.iter().filter(|(_, (_, e))| live(*e, now)).map(|(k, (v, _))| (&k.0, v)).collect()
        })
    }

    /// Clears the map state `name` of this key.
    pub fn map_clear(&mut self, name: &str) {
        self.state.maps.remove(name);
    }

    /// Clears every value state and deletes every timer of this key (the key is then gone from
    /// the operator's state).
    pub fn clear_all(&mut self) {
        self.state.values.clear();
        self.state.lists.clear();
        self.state.maps.clear();
        for (domain, at) in std::mem::take(&mut self.state.timers) {
            self.changes.push((false, domain, at));
        }
    }

    /// Registers a timer of this key at `at` in `domain` (again: nothing changes).
    pub fn register_timer(&mut self, domain: TimeDomain, at: Timestamp) {
        if self.state.timers.insert((domain, at)) {
            self.changes.push((true, domain, at));
        }
    }

    /// Deletes the timer of this key at `at` in `domain`, if any.
    pub fn delete_timer(&mut self, domain: TimeDomain, at: Timestamp) {
        if self.state.timers.remove(&(domain, at)) {
            self.changes.push((false, domain, at));
        }
    }

    /// This key's timers in `domain`, in instant order.
    pub fn timers(&self, domain: TimeDomain) -> Vec<Timestamp> {
        self.state.timers.iter().filter(|(d, _)| *d == domain).map(|&(_, t)| t).collect()
    }

    /// Emits an output row: one value per column of the processor's declared output schema, in
    /// its order and of its types. The row is not checked against the schema: a row with fewer
    /// values is written without the missing columns, a value of another type as it is.
    pub fn emit(&mut self, row: Row) {
        self.out.rows.push(row);
    }

    /// An empty row with room for at least `values` values, to fill and [`KeyContext::emit`]:
    /// the buffer of a row already written when one is kept, so emitting does not allocate per
    /// row (a new `Vec` works as well, at the cost of an allocation).
    pub fn row_buffer(&mut self, values: usize) -> Row {
        self.out.row_buffer(values)
    }
}

/// User code run per key (see the module documentation for when each call happens).
///
/// Each partition actor has its own instance: [`StatefulProcessor::init`] once at its start,
/// then the handlers for the keys of its key range, then [`StatefulProcessor::close`] once when
/// it ends. Whatever must survive a restart or move to another partition actor when the
/// parallelism changes belongs in the [`KeyContext`]'s state, not in the instance's fields.
///
/// # Example
///
/// Counts each key's records and emits the count every 10 of them:
///
/// ```
/// use eddy_engine::operator::{KeyContext, StatefulProcessor, TimeDomain};
/// use eddy_engine::{Record, Schema, Timestamp, Value};
///
/// struct EveryTen;
///
/// impl StatefulProcessor for EveryTen {
///     fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>) {
///         for _ in records {
///             let n = ctx.get("n").and_then(Value::as_i64).unwrap_or(0) + 1;
///             ctx.set("n", Value::Long(n), None);
///             if n % 10 == 0 {
///                 let key = ctx.key().values().next().cloned().unwrap_or(Value::Null);
///                 ctx.emit(vec![key, Value::Long(n)]);
///             }
///         }
///     }
///     fn handle_timer(&mut self, _domain: TimeDomain, _at: Timestamp, _ctx: &mut KeyContext<'_>) {}
/// }
/// ```
pub trait StatefulProcessor: Send {
    /// Called once, before any other call, with the schema of the records the handlers will see
    /// (the source's columns after its `select`, every one decoded: none is left NULL as unused):
    /// resolve column names to indexes here ([`Schema::resolve`]). The default does nothing.
    fn init(&mut self, input: &Schema) {
        let _ = input;
    }

    /// `records` of `ctx`'s key: one in real-time mode, all of the batch's in micro-batch mode
    /// (in arrival order). Records behind the watermark are not dropped before this call: compare
    /// their event time with [`KeyContext::watermark`] to treat them as late.
    fn handle_input(&mut self, records: &[&Record], ctx: &mut KeyContext<'_>);

    /// The timer of `ctx`'s key at `at` in `domain` fired (it is deleted before this call).
    fn handle_timer(&mut self, domain: TimeDomain, at: Timestamp, ctx: &mut KeyContext<'_>);

    /// Called once when the partition actor ends (end of input, a stop, a failure), after the
    /// last handler call. The default does nothing.
    fn close(&mut self) {}
}

/// One key's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct KeyState {
    /// Value states: name -> (value, processing-time instant it expires at).
    values: BTreeMap<String, (Value, Option<Timestamp>)>,
    timers: BTreeSet<(TimeDomain, Timestamp)>,
    /// List states: name -> elements in order, each with the instant it expires at.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    lists: BTreeMap<String, Vec<(Value, Option<Timestamp>)>>,
    /// Map states: name -> user key -> (value, the instant the entry expires at).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "map_states")]
    maps: BTreeMap<String, BTreeMap<KeyValue, MapEntry>>,
}

/// A map state's entry: its value and the instant it expires at.
type MapEntry = (Value, Option<Timestamp>);

/// Map states in a snapshot: each map as a list of (user key, entry) pairs, since a snapshot's
/// JSON objects take only strings as keys.
mod map_states {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::MapEntry;
    use crate::value::KeyValue;

    type Maps = BTreeMap<String, BTreeMap<KeyValue, MapEntry>>;

    pub(super) fn serialize<S: Serializer>(maps: &Maps, s: S) -> Result<S::Ok, S::Error> {
        let pairs: BTreeMap<&String, Vec<(&KeyValue, &MapEntry)>> =
            maps.iter().map(|(name, map)| (name, map.iter().collect())).collect();
        pairs.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Maps, D::Error> {
        let pairs: BTreeMap<String, Vec<(KeyValue, MapEntry)>> = BTreeMap::deserialize(d)?;
        Ok(pairs.into_iter().map(|(name, entries)| (name, entries.into_iter().collect())).collect())
    }
}

/// Whether a state entry expiring at `expires` is live at `now`.
fn live(expires: Option<Timestamp>, now: Timestamp) -> bool {
    expires.is_none_or(|e| now < e)
}

impl KeyState {
    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.timers.is_empty() && self.lists.is_empty() && self.maps.is_empty()
    }

    /// Drops every entry expired at `now`, and the lists and maps left empty.
    fn expire(&mut self, now: Timestamp) {
        self.values.retain(|_, (_, e)| live(*e, now));
        if !self.lists.is_empty() {
            self.lists.retain(|_, list| {
                list.retain(|(_, e)| live(*e, now));
                !list.is_empty()
            });
        }
        if !self.maps.is_empty() {
            self.maps.retain(|_, map| {
                map.retain(|_, (_, e)| live(*e, now));
                !map.is_empty()
            });
        }
    }
}

/// Configuration of a [`Processor`].
#[derive(Clone, Debug)]
pub struct ProcessorConfig {
    /// Execution mode.
    pub mode: Mode,
    /// Indexes of the `partition_by` columns, in order.
    pub key_columns: Vec<usize>,
}

/// A [`StatefulProcessor`] as an operator.
pub struct Processor {
    cfg: ProcessorConfig,
    user: Box<dyn StatefulProcessor>,
    keys: HashMap<GroupKey, KeyState>,
    /// Every timer, in firing order.
    timers: BTreeSet<(TimeDomain, Timestamp, GroupKey)>,
    now: Timestamp,
    watermark: Timestamp,
    batch: Option<BatchContext>,
    /// Micro-batch: the batch's records by key, in arrival order.
    pending: BTreeMap<GroupKey, Vec<Record>>,
    /// The state handed to a call for a key without state; empty between calls.
    scratch_state: KeyState,
    /// A call registered a timer the clock or the watermark has already reached: it fires right
    /// after the call (real-time) or with the batch's due timers (micro-batch).
    due_now: bool,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor").field("cfg", &self.cfg).field("keys", &self.keys.len()).finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    keys: Vec<(GroupKey, KeyState)>,
    now: Timestamp,
    watermark: Timestamp,
}

impl Processor {
    /// A new operator with no state, running `user`.
    pub fn new(cfg: ProcessorConfig, user: Box<dyn StatefulProcessor>) -> Processor {
        Processor {
            cfg,
            user,
            keys: HashMap::new(),
            timers: BTreeSet::new(),
            now: Timestamp::MIN,
            watermark: Timestamp::MIN,
            batch: None,
            pending: BTreeMap::new(),
            scratch_state: KeyState::default(),
            due_now: false,
        }
    }

    /// Runs `call` on `key`'s state, then applies its timer changes and drops the key if its
    /// state is empty. The state stays in place in the map; a key without state gets the empty
    /// scratch state, and is inserted only if the call leaves state behind.
    fn with_key(
        &mut self,
        key: KeyOf<'_>,
        out: &mut Output,
        call: impl FnOnce(&mut dyn StatefulProcessor, &mut KeyContext<'_>),
    ) {
        let found = match &key {
            KeyOf::Held(k) => self.keys.get_key_value_mut(*k),
            KeyOf::Record { record, columns, .. } => self.keys.get_key_value_mut(&RecordKey { record, columns }),
        };
        let (key, state, held) = match found {
            Some((k, state)) => (KeyOf::Held(k), state, true),
            None => (key, &mut self.scratch_state, false),
        };
        let mut ctx = KeyContext { key, state, out, now: self.now, watermark: self.watermark, changes: Vec::new() };
        call(self.user.as_mut(), &mut ctx);
        // expired values go with the key's next call
        let now = self.now;
        ctx.state.expire(now);
        let empty = ctx.state.is_empty();
        if ctx.changes.is_empty() && held != empty {
            return; // the common case: a key with state keeps it, a key without stays without
        }
        let key = ctx.key.to_owned_key();
        for (added, domain, at) in std::mem::take(&mut ctx.changes) {
            let passed = match domain {
                TimeDomain::ProcessingTime => self.now,
                TimeDomain::EventTime => self.watermark,
            };
            self.due_now |= added && at <= passed;
            if added {
                self.timers.insert((domain, at, key.clone()));
            } else {
                self.timers.remove(&(domain, at, key.clone()));
            }
        }
        match (held, empty) {
            (true, true) => {
                self.keys.remove(&key);
            }
            (false, false) => {
                let state = std::mem::take(&mut self.scratch_state);
                self.keys.insert(key, state);
            }
            _ => {}
        }
    }

    /// Fires every timer of `domain` due at `until` (inclusive), in (instant, key) order.
    fn fire(&mut self, domain: TimeDomain, until: Timestamp, out: &mut Output) {
        loop {
            if self.timers.is_empty() {
                return; // the common case per record: no range lookup
            }
            let due = self.timers.range((domain, Timestamp::MIN, GroupKey::default())..).next().cloned();
            let Some((d, at, key)) = due else { return };
            if d != domain || at > until {
                return;
            }
            self.timers.remove(&(d, at, key.clone()));
            if let Some(s) = self.keys.get_mut(&key) {
                s.timers.remove(&(d, at));
            }
            // a processing-time timer's call sees the clock at its instant
            let saved = self.now;
            if domain == TimeDomain::ProcessingTime {
                self.now = at;
            }
            self.with_key(KeyOf::Held(&key), out, |user, ctx| user.handle_timer(domain, at, ctx));
            self.now = saved;
        }
    }
}

impl Drop for Processor {
    fn drop(&mut self) {
        self.user.close();
    }
}

impl Operator for Processor {
    fn key_columns(&self) -> &[usize] {
        &self.cfg.key_columns
    }

    fn begin_batch(&mut self, ctx: &BatchContext) {
        self.batch = Some(*ctx);
        self.now = self.now.max(ctx.processing_time);
        self.watermark = self.watermark.max(ctx.watermarks.late);
    }

    fn on_record(&mut self, record: &Record, watermark: Timestamp, out: &mut Output) {
        match self.cfg.mode {
            Mode::MicroBatch => {
                let key = GroupKey::of(record, &self.cfg.key_columns);
                self.pending.entry(key).or_default().push(record.clone());
            }
            Mode::RealTime => {
                self.advance_watermark(watermark, out);
                // out of `self` for the call, which borrows `self` whole (a move, no copy)
                let columns = std::mem::take(&mut self.cfg.key_columns);
                let key = KeyOf::Record { record, columns: &columns, built: OnceCell::new() };
                self.with_key(key, out, |user, ctx| user.handle_input(&[record], ctx));
                self.cfg.key_columns = columns;
                if std::mem::take(&mut self.due_now) {
                    let (now, watermark) = (self.now, self.watermark);
                    self.fire(TimeDomain::ProcessingTime, now, out);
                    self.fire(TimeDomain::EventTime, watermark, out);
                }
            }
        }
    }

    fn end_batch(&mut self, out: &mut Output) {
        for (key, records) in std::mem::take(&mut self.pending) {
            let refs: Vec<&Record> = records.iter().collect();
            self.with_key(KeyOf::Held(&key), out, |user, ctx| user.handle_input(&refs, ctx));
        }
        let now = self.now;
        self.fire(TimeDomain::ProcessingTime, now, out);
        if let Some(b) = self.batch.take() {
            self.watermark = self.watermark.max(b.watermarks.evict);
        }
        let w = self.watermark;
        self.fire(TimeDomain::EventTime, w, out);
        self.due_now = false;
    }

    fn advance_watermark(&mut self, w: Timestamp, out: &mut Output) {
        if w > self.watermark {
            self.watermark = w;
            if !self.timers.is_empty() {
                self.fire(TimeDomain::EventTime, w, out);
            }
        }
    }

    fn advance_clock(&mut self, now: Timestamp, out: &mut Output) {
        if now > self.now {
            if !self.timers.is_empty() {
                self.fire(TimeDomain::ProcessingTime, now, out);
            }
            self.now = now;
        }
    }

    fn next_timer(&self) -> Option<Timestamp> {
        self.timers.iter().find(|(d, _, _)| *d == TimeDomain::ProcessingTime).map(|&(_, t, _)| t)
    }

    fn wants_no_data_batch(&self, evicted_with: Timestamp, next: Timestamp) -> bool {
        next > evicted_with && self.timers.iter().any(|(d, t, _)| *d == TimeDomain::EventTime && *t <= next)
    }

    fn state_len(&self) -> usize {
        self.keys.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut keys: Vec<_> = self.keys.iter().map(|(k, s)| (k.clone(), s.clone())).collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        let snap = Snapshot { keys, now: self.now, watermark: self.watermark };
        // Serialising plain data to a Vec cannot fail.
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let snap: Snapshot = serde_json::from_slice(bytes)
            .map_err(|e| StateError::Corrupt { operator: "processor", why: e.to_string() })?;
        for (key, state) in snap.keys {
            for &(d, t) in &state.timers {
                self.timers.insert((d, t, key.clone()));
            }
            self.keys.insert(key, state);
        }
        self.now = self.now.max(snap.now);
        self.watermark = self.watermark.max(snap.watermark);
        Ok(())
    }

    fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.keys.retain(|k, _| keep(k));
        let keys = &self.keys;
        self.timers.retain(|(_, _, k)| keys.contains_key(k));
    }
}

#[cfg(test)]
#[path = "processor_tests.rs"]
mod tests;
