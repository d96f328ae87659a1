//! Snapshot, restore and re-partitioning of the panes of every group ([`PaneState`]).

use super::{GroupSnapshot, Layout, PaneState};
use crate::aggregate::{AggState, AggregateFn};
use crate::value::GroupKey;

impl PaneState {
    /// Every group, ordered by key.
    pub(in crate::operator::window_aggregate) fn snapshot(&self, measures: usize) -> Vec<GroupSnapshot> {
        let m = measures;
        self.groups
            .sorted_slots()
            .into_iter()
            .map(|slot| {
                let g = self.groups.get(slot);
                GroupSnapshot {
                    key: self.groups.key(slot).clone(),
                    closed: g.closed,
                    panes: g
                        .panes
                        .iter()
                        .chain(g.last.as_ref())
                        .enumerate()
                        .map(|(i, p)| (p.start, g.states_at(i, m).iter().map(AggState::to_bytes).collect()))
                        .collect(),
                }
            })
            .collect()
    }

    /// Adds the groups of a snapshot (a group already here has the snapshot's panes merged in).
    ///
    /// # Errors
    /// A message when a pane does not fit the query (measure count, state bytes, pane start).
    pub(in crate::operator::window_aggregate) fn restore(
        &mut self,
        groups: Vec<GroupSnapshot>,
        measures: &[AggregateFn],
    ) -> Result<(), String> {
        let m = measures.len();
        for snap in groups {
            let mut panes = Vec::with_capacity(snap.panes.len());
            for (start, bytes) in snap.panes {
                if bytes.len() != m {
                    return Err(format!("{} measures in the snapshot, {m} in the query", bytes.len()));
                }
                let states = measures
                    .iter()
                    .zip(&bytes)
                    .map(|(f, b)| f.state_from_bytes(b).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                let last_end = match self.layout {
                    Layout::Plain { time_key } => {
                        time_key.and_then(|i| snap.key.0.get(i)?.0.key_time()).map_or(i64::MAX, |t| t.0)
                    }
                    Layout::Fixed(grid) => match grid.last_end(start) {
                        e if grid.pane_start(start) == start && e > start => e,
                        _ => return Err(format!("pane start {start} is not on the query's window grid")),
                    },
                };
                panes.push((start, last_end, states));
            }
            if panes.is_empty() {
                continue;
            }
            let (slot, new) = self.groups.find_or_insert_key(snap.key);
            let g = self.groups.get_mut(slot);
            if new {
                g.reset();
                g.closed = snap.closed;
            } else {
                g.closed = g.closed.max(snap.closed);
            }
            for (start, last_end, states) in panes {
                let i = self.open_pane(slot, start, last_end, None, measures);
                let g = self.groups.get_mut(slot);
                g.unpark(m);
                for ((f, acc), st) in measures.iter().zip(&mut g.states[i * m..(i + 1) * m]).zip(&states) {
                    f.merge(acc, st);
                }
                g.park(m);
            }
        }
        Ok(())
    }

    /// Drops the groups for which `keep` is false.
    pub(in crate::operator::window_aggregate) fn retain_groups(&mut self, keep: &mut dyn FnMut(&GroupKey) -> bool) {
        let slots: Vec<u32> = self.groups.live_slots().collect();
        for slot in slots {
            if !keep(self.groups.key(slot)) {
                let g = self.groups.get_mut(slot);
                self.panes -= g.panes.len() + usize::from(g.last.is_some());
                g.reset();
                self.groups.remove(slot);
            }
        }
    }
}
