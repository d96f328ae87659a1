//! Incremental snapshots: the state at a barrier, written a few keys at a time while records
//! keep arriving, so a checkpoint of millions of keys never stalls the partition actor.
//!
//! The technique is the one of Flink's asynchronous snapshots of heap state (copy-on-write per
//! key, FLINK-6138), done on the actor's own thread without copies:
//!
//! - [`RollingWindow::begin_incremental`] (at the barrier) notes the cut: it writes the header
//!   (frontier, watermark, tracker, the number of keys) and opens *generation* `g`. Every key
//!   carries the generation it was last accounted for in (`KeyState::snap_mark`): a key that
//!   existed at the barrier has a mark below `g`; a key created afterwards gets `g` (it is not
//!   part of this snapshot). O(1): no key is touched.
//! - [`RollingWindow::step_incremental`] walks the slab of keys from a cursor, writing each key
//!   whose mark is below `g` and setting its mark to `g`.
//! - **write-before-modify**: before a record, a timer or an eviction changes or frees a key whose
//!   mark is below `g`, the key is written as it stands (still its state at the barrier, since
//!   nothing changed it since) and marked. So each key of the barrier is written exactly once,
//!   with its state at the barrier, whichever comes first.
//! - The snapshot is complete when the cursor has passed the last slot that existed at the
//!   barrier (slots only ever get added after it; a freed slot's key was written before it was
//!   freed). The key count of the header is then corrected to the keys actually written (equal
//!   to the count at the barrier unless there is a bug; the bytes stay readable either way).
//!
//! The bytes are those of [`super::snapshot`] with the keys in another order, so
//! [`Operator::restore`](crate::operator::Operator::restore) reads both alike.

use super::RollingWindow;
use super::keys::KeyState;
use super::snapshot::Writer;

/// A snapshot being written (see the module documentation).
pub(super) struct InProgress {
    /// Its generation: keys with a lower mark are still to be written.
    generation: u64,
    /// Next slot the walk visits.
    cursor: usize,
    /// Slots at the barrier (the walk ends there).
    end: usize,
    w: Writer,
    /// Offset of the key count in the header.
    count_at: usize,
    /// Keys at the barrier.
    expected: usize,
    /// Keys written so far.
    written: usize,
}

impl std::fmt::Debug for InProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProgress")
            .field("generation", &self.generation)
            .field("cursor", &self.cursor)
            .field("end", &self.end)
            .field("bytes", &self.w.out.len())
            .field("written", &self.written)
            .field("expected", &self.expected)
            .finish()
    }
}

impl InProgress {
    /// Writes `st` (its state at the barrier) unless it was written already or is newer than
    /// the barrier.
    #[inline]
    fn write(&mut self, st: &mut KeyState) {
        if st.snap_mark < self.generation {
            st.snap_mark = self.generation;
            self.w.key(st);
            self.written += 1;
        }
    }
}

impl RollingWindow {
    /// Notes the cut of a new snapshot (see the module documentation); a snapshot still in
    /// progress is abandoned (the new one holds every key anyway).
    pub(super) fn begin_incremental(&mut self) {
        self.snap_gen += 1;
        let keys = self.keys.len();
        // Room for the whole snapshot up front, estimated generously from the last one: growing a
        // buffer of tens of megabytes mid-way would move it on the actor's thread, while room
        // never written costs address space only (the pages are not touched).
        let per_key = if self.snap_bytes_per_key > 0.0 { self.snap_bytes_per_key * 1.5 } else { 128.0 };
        // A stored snapshot's buffer is written into when it holds the last snapshot's bytes per
        // key with 10 % to spare (its pages are mapped already); growing it would copy it whole.
        let enough = 64.0 + self.snap_bytes_per_key * 1.1 * keys as f64;
        let spare = self.snap_spare.take().filter(|b| self.snap_bytes_per_key > 0.0 && b.capacity() as f64 >= enough);
        let mut w = Writer::reusing(spare, 64 + (per_key * keys as f64) as usize);
        let count_at = w.header(
            (self.plan.lanes.len(), self.plan.bounded.len(), self.plan.lifetime.len()),
            self.frontier,
            self.watermark,
            self.tracker.as_ref(),
            keys,
        );
        self.snap = Some(Box::new(InProgress {
            generation: self.snap_gen,
            cursor: 0,
            end: self.keys.slots.len(),
            w,
            count_at,
            expected: keys,
            written: 0,
        }));
    }

    /// Visits up to `budget` slots (at least one) of the snapshot in progress; returns its bytes
    /// once complete, `None` while slots remain or when none is in progress.
    pub(super) fn step_incremental(&mut self, budget: usize) -> Option<Vec<u8>> {
        let s = self.snap.as_deref_mut()?;
        let stop = s.cursor.saturating_add(budget.max(1)).min(s.end);
        for st in self.keys.slots.iter_slots_mut(s.cursor, stop).flatten() {
            s.write(st);
        }
        s.cursor = stop;
        if s.cursor < s.end {
            return None;
        }
        let mut s = self.snap.take()?;
        debug_assert_eq!(s.written, s.expected, "an incremental snapshot missed keys");
        s.w.set_count(s.count_at, s.written);
        if s.written > 0 {
            self.snap_bytes_per_key = s.w.out.len() as f64 / s.written as f64;
        }
        Some(s.w.finish())
    }

    /// Write-before-modify: called before key `slot` changes or is freed.
    #[inline]
    pub(super) fn before_change(&mut self, slot: u32) {
        if let Some(s) = self.snap.as_deref_mut()
            && let Some(st) = self.keys.get_mut(slot)
        {
            s.write(st);
        }
    }

    /// Write-before-modify for a key already taken out of the slab (replaced by a restore).
    pub(super) fn write_replaced(&mut self, st: &mut KeyState) {
        if let Some(s) = self.snap.as_deref_mut() {
            s.write(st);
        }
    }

    /// Frees key `slot` (written first if a snapshot still needs it).
    pub(super) fn remove_key(&mut self, slot: u32) {
        self.before_change(slot);
        self.keys.remove(slot);
    }
}

#[cfg(test)]
mod tests;
