//! Session windows (Spark's `session_window(col, gap)`, SPARK-10816): each record spans
//! `[t, t + gap)`; spans of one key that overlap or touch merge; a session is
//! `[min t, max(t + gap))`. The gap is fixed, or read per record from a STRING column holding a
//! Spark duration (a null, unparsable, zero or negative gap drops the record).
//!
//! Output modes: `append` (a session is emitted once W >= its end) and `complete`; `update` is
//! refused by validation, as Spark refuses it.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::Output;
use super::window_aggregate::{WindowAggregateConfig, measure_input};
use crate::aggregate::AggState;
use crate::time::{Duration, Timestamp, parse_duration};
use crate::value::{GroupKey, Record, Row, Value};

/// The gap of session windows.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionGap {
    /// The same gap for every record (> 0).
    Fixed(Duration),
    /// Read per record from this STRING column (a Spark duration such as `"10 seconds"`).
    Column(usize),
}

impl SessionGap {
    /// The gap for `record`; `None` when null, unparsable, zero or negative.
    pub fn of(&self, record: &Record) -> Option<Duration> {
        let d = match self {
            SessionGap::Fixed(d) => *d,
            SessionGap::Column(i) => parse_duration(record.values[*i].as_str()?).ok()?,
        };
        (d.0 > 0).then_some(d)
    }
}

#[derive(Debug)]
struct Session {
    start: Timestamp,
    end: Timestamp,
    aggs: Vec<AggState>,
}

/// The open sessions of every key, and an index of them by end.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    sessions: HashMap<GroupKey, Vec<Session>>,
    /// Keys by the end of a session they had; entries may be stale (checked on eviction).
    by_end: BTreeMap<Timestamp, Vec<GroupKey>>,
    count: usize,
}

/// One session in a snapshot: start, end, serialised measure states.
type SessionRow = (Timestamp, Timestamp, Vec<Vec<u8>>);

#[derive(Serialize, Deserialize)]
struct SessionSnapshot {
    sessions: Vec<(GroupKey, Vec<SessionRow>)>,
}

impl SessionState {
    /// Number of open sessions.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Adds a record spanning `[t, end)` to the sessions of `group`, merging every session it
    /// overlaps or touches.
    pub(crate) fn add(
        &mut self,
        group: GroupKey,
        t: Timestamp,
        end: Timestamp,
        record: &Record,
        cfg: &WindowAggregateConfig,
    ) {
        let list = self.sessions.entry_ref(&group).or_default();
        let mut merged = Session { start: t, end, aggs: cfg.measures.iter().map(|m| m.new_state()).collect() };
        let before = list.len();
        let mut i = 0;
        while i < list.len() {
            let s = &list[i];
            if s.start <= merged.end && s.end >= merged.start {
                let s = list.remove(i);
                merged.start = merged.start.min(s.start);
                merged.end = merged.end.max(s.end);
                for ((m, acc), other) in cfg.measures.iter().zip(merged.aggs.iter_mut()).zip(&s.aggs) {
                    m.merge(acc, other);
                }
                // A merge can make the span reach sessions already passed: rescan.
                i = 0;
            } else {
                i += 1;
            }
        }
        for (m, acc) in cfg.measures.iter().zip(merged.aggs.iter_mut()) {
            m.update(acc, measure_input(m, record));
        }
        let new_end = merged.end;
        let pos = list.partition_point(|s| s.start < merged.start);
        list.insert(pos, merged);
        let after = list.len();
        self.count = self.count + after - before;
        self.by_end.entry(new_end).or_default().push(group);
    }

    fn row(group: &GroupKey, s: &Session, cfg: &WindowAggregateConfig) -> Row {
        let mut row = Vec::with_capacity(1 + group.0.len() + s.aggs.len());
        row.push(Value::Window { start: s.start, end: s.end });
        row.extend(group.values().cloned());
        row.extend(cfg.measures.iter().zip(&s.aggs).map(|(m, a)| m.finish(a)));
        row
    }

    /// Removes sessions with end <= `w`, emitting them when `emit`.
    pub(crate) fn evict(&mut self, w: Timestamp, emit: bool, cfg: &WindowAggregateConfig, out: &mut Output) {
        while let Some(entry) = self.by_end.first_entry() {
            if *entry.key() > w {
                break;
            }
            for group in entry.remove() {
                let Some(list) = self.sessions.get_mut(&group) else { continue };
                let mut kept = Vec::with_capacity(list.len());
                for s in list.drain(..) {
                    if s.end <= w {
                        if emit {
                            out.rows.push(Self::row(&group, &s, cfg));
                        }
                        self.count -= 1;
                    } else {
                        kept.push(s);
                    }
                }
                if kept.is_empty() {
                    self.sessions.remove(&group);
                } else {
                    *list = kept;
                }
            }
        }
    }

    /// Emits every open session (complete mode), in key order.
    pub(crate) fn emit_all(&self, cfg: &WindowAggregateConfig, out: &mut Output) {
        let mut groups: Vec<&GroupKey> = self.sessions.keys().collect();
        groups.sort();
        for g in groups {
            for s in &self.sessions[g] {
                out.rows.push(Self::row(g, s, cfg));
            }
        }
    }

    /// Nothing to clear: sessions carry no per-batch marks (kept for symmetry with windows).
    pub(crate) fn clear_dirty(&mut self) {}

    /// Serialises every session.
    pub(crate) fn snapshot(&self, _cfg: &WindowAggregateConfig) -> Vec<u8> {
        let mut sessions: Vec<_> = self
            .sessions
            .iter()
            .map(|(g, list)| {
                (
                    g.clone(),
                    list.iter().map(|s| (s.start, s.end, s.aggs.iter().map(|a| a.to_bytes()).collect())).collect(),
                )
            })
            .collect();
        sessions.sort_by(|a: &(GroupKey, Vec<_>), b| a.0.cmp(&b.0));
        serde_json::to_vec(&SessionSnapshot { sessions }).unwrap_or_default()
    }

    /// Adds a snapshot's sessions (of groups absent here).
    pub(crate) fn restore(&mut self, bytes: &[u8], cfg: &WindowAggregateConfig) -> Result<(), String> {
        let snap: SessionSnapshot = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        for (group, list) in snap.sessions {
            let mut restored = Vec::with_capacity(list.len());
            for (start, end, aggs) in list {
                if aggs.len() != cfg.measures.len() {
                    return Err("measure count differs from the query's".into());
                }
                let aggs = cfg
                    .measures
                    .iter()
                    .zip(&aggs)
                    .map(|(m, b)| m.state_from_bytes(b).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                self.by_end.entry(end).or_default().push(group.clone());
                restored.push(Session { start, end, aggs });
            }
            self.count += restored.len();
            if let Some(old) = self.sessions.insert(group, restored) {
                self.count -= old.len();
            }
        }
        Ok(())
    }

    /// Drops the sessions of every group for which `keep` is false.
    pub(crate) fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        self.sessions.retain(|g, _| keep(g));
        self.count = self.sessions.values().map(Vec::len).sum();
        let sessions = &self.sessions;
        self.by_end.retain(|_, groups| {
            groups.retain(|g| sessions.contains_key(g));
            !groups.is_empty()
        });
    }
}
