//! When keys are next due: entries `(instant, slot)` with lazy deletion, fired in `(instant,
//! slot)` order. A key registers the instant (frontier) of its next change in
//! [`KeyState::timer`](super::keys::KeyState); an entry is *valid* when its key's `timer` is its
//! instant, and fires only then.
//!
//! Entries sit in two kinds of structures:
//!
//! - a *queue* per distinct range length `d` (FIFO, `(instant, slot)` non-decreasing): when a
//!   record of time `t` enters a range of length `d` and `(t + d, slot)` is not below the back
//!   of that range's queue, the entry `(t + d, slot)` (the instant the record leaves the range)
//!   is appended. Records that arrive in event-time order (the common case) enter in that order,
//!   so nearly every record is queued, at O(1). A record that does not fit at the back raises its
//!   key's [`KeyState::queued_after`](super::keys::KeyState) instead: every record of the key
//!   whose leave instant is above `queued_after` has its queue entry;
//! - a min-heap for every other instant a key registers (a pending record becoming visible, a
//!   record not queued, keys restored).
//!
//! So a key whose next instant is the leave instant of a queued record registers nothing (the
//! entry is already queued, see [`Plan::next_event`](super::plan::Plan::next_event)); otherwise
//! it pushes `(instant, slot)` on the heap.
//!
//! Validity: a heap entry whose key is gone or whose instant is no longer the key's is stale. A
//! queue entry is stale when its key is gone or is due later than the entry (`timer` `None` or
//! above it: the record left the range, a key's timer being the earliest instant it changes); a
//! queue entry above its key's timer is kept (the record is still in range: it is the key's
//! timer later). A queue is a [`Fifo`] of fixed-size blocks (appending never copies what is
//! queued). The fronts of the heap and queues are kept non-stale (dropped after every
//! operation), so [`Timers::next`], the earliest front, is exact: a front above its key's timer
//! is never the earliest, as the key's own (valid) entry is below it. The heap is rebuilt when
//! stale entries outnumber live keys; a queue holds at most one entry per record in range.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::fifo::Fifo;
use super::keys::Keys;
use crate::operator::PREFETCH_DISTANCE;
use crate::time::Timestamp;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Timestamp, u32)>>,
    /// Per distinct range length ([`Plan::spans`](super::plan::Plan)): entries in
    /// non-decreasing `(instant, slot)` order.
    queues: Box<[Fifo<(Timestamp, u32)>]>,
}

/// Where the earliest entry sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Heap,
    Queue(usize),
}

/// Whether a heap entry is valid: its key is due at its instant.
#[inline]
fn valid(keys: &Keys, at: Timestamp, slot: u32) -> bool {
    keys.get(slot).is_some_and(|s| s.timer == Some(at))
}

/// Whether a queue entry is stale: its key is gone or is due later than it (or never).
#[inline]
fn queue_stale(keys: &Keys, at: Timestamp, slot: u32) -> bool {
    keys.get(slot).is_none_or(|s| s.timer.is_none_or(|t| t > at))
}

impl Timers {
    /// No entries; one queue per distinct range length (`spans` of them).
    pub(super) fn new(spans: usize) -> Timers {
        Timers { heap: BinaryHeap::new(), queues: (0..spans).map(|_| Fifo::default()).collect() }
    }

    /// Registers slot `slot` as due at `at` on the heap (the caller has set the key's `timer` to
    /// `at`).
    #[inline]
    pub(super) fn push(&mut self, at: Timestamp, slot: u32) {
        if self.heap.len() == self.heap.capacity() && self.heap.len() >= 1024 {
            crate::stall::note(crate::stall::Cause::BufferGrowth);
        }
        self.heap.push(Reverse((at, slot)));
    }

    /// Appends `(at, slot)` to queue `span` if it is not below the queue's back; returns whether
    /// it was appended (if not, the caller raises the key's `queued_after` to `at`).
    #[inline]
    pub(super) fn queue(&mut self, span: usize, at: Timestamp, slot: u32) -> bool {
        let Some(q) = self.queues.get_mut(span) else { return false };
        if q.back().is_some_and(|&back| back > (at, slot)) {
            return false;
        }
        q.push_back((at, slot));
        true
    }

    /// Starts loading the states of the keys due soonest: the heap's first entries (the top
    /// and its children, among which the next entry is) and the first entries of each queue.
    ///
    /// The next key due on the heap is among its first 3 entries: their slots are loaded; the
    /// top's (loaded by an earlier call while it rose) is followed into its boxes and buffers. A
    /// queue is consumed in order, about one entry per record: as for the records' own keys
    /// (`Hints`), the slot of the entry [`PREFETCH_DISTANCE`] ahead is loaded, the boxes of
    /// the one half as far, the buffers of the front.
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
        for q in self.queues.iter() {
            if let Some(&(_, slot)) = q.get(PREFETCH_DISTANCE) {
                keys.prefetch_slot(slot);
            }
            if let Some(&(_, slot)) = q.get(PREFETCH_DISTANCE / 2) {
                keys.prefetch_boxes(slot);
            }
            if let Some(&(_, slot)) = q.front() {
                keys.prefetch_leaves(slot);
            }
        }
    }

    /// The earliest front and where it sits.
    #[inline]
    fn front(&self) -> Option<((Timestamp, u32), Source)> {
        let mut best = self.heap.peek().map(|&Reverse(e)| (e, Source::Heap));
        for (k, q) in self.queues.iter().enumerate() {
            if let Some(&e) = q.front()
                && best.is_none_or(|(b, _)| e < b)
            {
                best = Some((e, Source::Queue(k)));
            }
        }
        best
    }

    /// The earliest instant a key is due at (exact once [`Timers::clean`] ran).
    pub(super) fn next(&self) -> Option<Timestamp> {
        self.front().map(|((at, _), _)| at)
    }

    /// Takes the earliest valid entry due at or before `f`.
    #[inline]
    pub(super) fn pop_due(&mut self, f: Timestamp, keys: &Keys) -> Option<(Timestamp, u32)> {
        while let Some(((at, slot), source)) = self.front() {
            if at > f {
                return None;
            }
            match source {
                Source::Heap => {
                    self.heap.pop();
                }
                Source::Queue(k) => {
                    self.queues[k].pop_front();
                }
            }
            // The earliest entry is never above its key's timer (that key's valid entry would
            // be earlier): valid or stale.
            if valid(keys, at, slot) {
                return Some((at, slot));
            }
        }
        None
    }

    /// Drops stale entries from the fronts; rebuilds the heap from the keys when it holds more
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
        self.clean_queues(keys);
    }

    fn clean_queues(&mut self, keys: &Keys) {
        for q in self.queues.iter_mut() {
            while let Some(&(at, slot)) = q.front() {
                if !queue_stale(keys, at, slot) {
                    break;
                }
                q.pop_front();
            }
        }
    }

    /// One heap entry per key with a timer (the queues keep their entries: still valid, or
    /// stale and dropped in time).
    pub(super) fn rebuild(&mut self, keys: &Keys) {
        crate::stall::note(crate::stall::Cause::TimerRebuild);
        let entries: Vec<Reverse<(Timestamp, u32)>> =
            keys.live().filter_map(|(i, s)| s.timer.map(|at| Reverse((at, i)))).collect();
        self.heap = BinaryHeap::from(entries);
        self.clean_queues(keys);
    }
}
