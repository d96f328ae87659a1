//! Restore: the keys of a snapshot ([`super::snapshot`]) added to the operator, each built once
//! in place. With a keep predicate (a re-split across a change of `parallelism`), a key that
//! another partition actor owns is skipped over in the bytes (its records are never built).

use super::RollingWindow;
use super::snapshot::{MAGIC, Reader};
use crate::operator::StateError;
use crate::time::Timestamp;
use crate::value::{GroupKey, KeyValue, Value};

impl RollingWindow {
    /// [`Operator::restore`](crate::operator::Operator::restore), keeping only the keys for
    /// which `keep` (when given) is true.
    pub(super) fn restore_from(
        &mut self,
        bytes: &[u8],
        mut keep: Option<&mut dyn FnMut(&GroupKey) -> bool>,
    ) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "rolling_window", why };
        let mut r = Reader::new(bytes);
        if r.take(MAGIC.len()).map_err(corrupt)? != MAGIC {
            return Err(corrupt("not a rolling-window snapshot (bad magic)".into()));
        }
        let lanes = self.plan.lanes.len();
        let shape = (r.u32().map_err(corrupt)?, r.u32().map_err(corrupt)?, r.u32().map_err(corrupt)?);
        if shape != (lanes as u32, self.plan.bounded.len() as u32, self.plan.lifetime.len() as u32) {
            return Err(corrupt(format!(
                "measures differ from the query's: (input columns, bounded, lifetime) = {shape:?}, expected ({lanes}, {}, {})",
                self.plan.bounded.len(),
                self.plan.lifetime.len()
            )));
        }
        let frontier = Timestamp(r.i64().map_err(corrupt)?);
        let watermark = Timestamp(r.i64().map_err(corrupt)?);
        let tracker = r.tracker().map_err(corrupt)?;
        let n = r.count(4).map_err(corrupt)?;
        // Room for every key at once (a re-split keeps about its share): no rehash, no slab copy.
        self.keys.reserve(if keep.is_some() { n / 2 } else { n });
        let parts_expected = self.cfg.key_columns.len();
        for _ in 0..n {
            let parts = r.u32().map_err(corrupt)? as usize;
            if parts != parts_expected {
                return Err(corrupt(format!("a key of {parts} values, expected {parts_expected}")));
            }
            let key = (0..parts).map(|_| r.value(0)).collect::<Result<Box<[Value]>, _>>().map_err(corrupt)?;
            if let Some(keep) = keep.as_deref_mut()
                && !keep(&GroupKey(key.iter().cloned().map(KeyValue).collect()))
            {
                r.skip_records(lanes).map_err(corrupt)?;
                r.skip_records(lanes).map_err(corrupt)?;
                r.take(8 * self.plan.bounded.len()).map_err(corrupt)?;
                for _ in 0..self.plan.lifetime.len() {
                    r.bytes().map_err(corrupt)?;
                }
                continue;
            }
            let pending = r.records(lanes).map_err(corrupt)?;
            let visible = r.records(lanes).map_err(corrupt)?;
            let hash = self.keys.hash(key.iter());
            let mut st = self.plan.key_with(key, hash, pending, visible);
            st.snap_mark = self.snap_gen;
            for b in 0..self.plan.bounded.len() {
                let s = r.u64().map_err(corrupt)? as usize;
                if s > st.visible.len() {
                    return Err(corrupt(format!("range start {s} past {} visible records", st.visible.len())));
                }
                st.starts[b] = s;
            }
            for l in 0..self.plan.lifetime.len() {
                let b = r.bytes().map_err(corrupt)?;
                let f = &self.plan.measures[self.plan.lifetime[l]].func;
                st.lifetime[l] = f.state_from_bytes(b).map_err(|e| corrupt(e.to_string()))?;
            }
            self.plan.rebuild_ranges(&mut st);
            // Groups of two snapshots are disjoint; should one repeat, the later one wins.
            // Its timer goes into the heap with every other key's at the end, in one heapify.
            st.timer = self.plan.next_event(&st);
            let (_, old) = self.keys.insert_or_replace(st);
            if let Some(mut old) = old {
                // A snapshot in progress may still need the replaced key as it was.
                self.write_replaced(&mut old);
            }
        }
        self.timers.rebuild(&self.keys);
        if !r.b.is_empty() {
            return Err(corrupt(format!("{} bytes after the last key", r.b.len())));
        }
        self.frontier = self.frontier.max(frontier);
        crate::operator::merge_trackers(&mut self.tracker, tracker);
        self.watermark = self.watermark.max(watermark);
        Ok(())
    }
}
