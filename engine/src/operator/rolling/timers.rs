//! When keys are next due: a min-heap of `(instant, slot)` with lazy deletion. A key registers
//! the instant (frontier) of its next change in [`KeyState::timer`](super::keys::KeyState); an
//! entry whose key is gone or whose instant is no longer the key's is stale and skipped. The top
//! of the heap is kept valid (stale entries above it are dropped after every operation), so
//! [`Timers::next`] is exact; when stale entries outnumber live keys the heap is rebuilt.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::keys::Keys;
use crate::time::Timestamp;

#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Timestamp, u32)>>,
}

fn valid(keys: &Keys, at: Timestamp, slot: u32) -> bool {
    keys.get(slot).is_some_and(|s| s.timer == Some(at))
}

impl Timers {
    /// Registers slot `slot` as due at `at` (the caller has set the key's `timer` to `at`).
    #[inline]
    pub(super) fn push(&mut self, at: Timestamp, slot: u32) {
        self.heap.push(Reverse((at, slot)));
    }

    /// Starts loading the states of the keys due soonest: the heap's first entries (the top
    /// and its children, among which the next entry is).
    ///
    ///
    /// The next key due is among the heap's first 3 entries: their slots are loaded; the top's
    /// (loaded by an earlier call while it rose) is followed into its boxes and buffers.
    #[inline]
    pub(super) fn prefetch(&self, keys: &Keys) {
        let top = self.heap.as_slice();
        for Reverse((_, slot)) in top.iter().take(3) {
            keys.prefetch_slot(*slot);
        }
        if let Some(Reverse((_, slot))) = top.first() {
            keys.prefetch_boxes(*slot);
            keys.prefetch_leaves(*slot);
        }
    }

    /// The earliest instant a key is due at (exact once [`Timers::clean`] ran).
    pub(super) fn next(&self) -> Option<Timestamp> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// Takes the earliest valid entry due at or before `f`.
    #[inline]
    pub(super) fn pop_due(&mut self, f: Timestamp, keys: &Keys) -> Option<(Timestamp, u32)> {
        while let Some(&Reverse((at, slot))) = self.heap.peek() {
            if at > f {
                return None;
            }
            self.heap.pop();
            if valid(keys, at, slot) {
                return Some((at, slot));
            }
        }
        None
    }

    /// Drops stale entries from the top; rebuilds the heap from the keys when it holds more
    /// than twice as many entries as there are keys (plus some slack).
    #[inline]
    pub(super) fn clean(&mut self, keys: &Keys) {
        if self.heap.len() > 2 * keys.len() + 1024 {
            self.rebuild(keys);
            return;
        }
        while let Some(&Reverse((at, slot))) = self.heap.peek() {
            if valid(keys, at, slot) {
                break;
            }
            self.heap.pop();
        }
    }

    /// One entry per key with a timer.
    pub(super) fn rebuild(&mut self, keys: &Keys) {
        let entries: Vec<Reverse<(Timestamp, u32)>> =
            keys.live().filter_map(|(i, s)| s.timer.map(|at| Reverse((at, i)))).collect();
        self.heap = BinaryHeap::from(entries);
    }
}
