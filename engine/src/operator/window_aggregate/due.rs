//! [`DueQueue`]: the expiry queue of fixed windows, `(due, slot)` entries taken in ascending
//! order of `due`, then of `slot` (the order of a min-heap of the pairs, so output order does
//! not depend on the structure).
//!
//! Window ends lie on the pane grid, so at any time the entries share few distinct `due`
//! instants (a tumbling or sliding query has a handful of windows open), while there are as
//! many entries as groups. Entries are kept in one bucket per instant (a sorted map of small
//! vectors): adding one appends to its bucket, and the due buckets are taken whole, sorted by
//! slot, then read in order. A binary heap of all entries instead paid a logarithmic sift, with
//! a cache miss per level, for every entry added and taken.

use std::collections::BTreeMap;

/// Most emptied buckets kept for reuse.
const SPARE_BUCKETS: usize = 16;

/// `(due, slot)` entries, taken in ascending `(due, slot)` order (see the module
/// documentation). Duplicates are kept (and taken) like distinct entries.
#[derive(Debug, Default)]
pub(crate) struct DueQueue {
    buckets: BTreeMap<i64, Vec<u32>>,
    /// The smallest key of `buckets` (`i64::MAX` when empty).
    first: i64,
    /// The bucket being taken by [`DueQueue::pop_due`]: its instant and its slots, sorted in
    /// descending order (popped from the end).
    taking: Option<(i64, Vec<u32>)>,
    spare: Vec<Vec<u32>>,
    len: usize,
}

impl DueQueue {
    /// An empty queue.
    pub(crate) fn new() -> DueQueue {
        DueQueue { first: i64::MAX, ..DueQueue::default() }
    }

    /// Adds an entry.
    #[inline]
    pub(crate) fn push(&mut self, due: i64, slot: u32) {
        self.len += 1;
        if let Some((at, slots)) = self.taking.as_mut()
            && *at == due
        {
            // joins the bucket being taken, in its place in slot order
            let i = slots.partition_point(|&s| s > slot);
            slots.insert(i, slot);
            return;
        }
        let spare = &mut self.spare;
        self.buckets.entry(due).or_insert_with(|| spare.pop().unwrap_or_default()).push(slot);
        self.first = self.first.min(due);
    }

    /// The smallest `due` of the entries (`i64::MAX` when there are none).
    #[inline]
    pub(crate) fn next_due(&self) -> i64 {
        match &self.taking {
            Some((at, slots)) if !slots.is_empty() => (*at).min(self.first),
            _ => self.first,
        }
    }

    /// The slot of the entry `ahead` places after the next one [`DueQueue::pop_due`] returns
    /// from the bucket it is taking (`None` past that bucket's end): for a prefetch.
    #[inline]
    pub(crate) fn upcoming(&self, ahead: usize) -> Option<u32> {
        let (_, slots) = self.taking.as_ref()?;
        slots.len().checked_sub(ahead + 1).map(|i| slots[i])
    }

    /// Removes and returns the smallest entry if its `due` is `<= limit`.
    pub(crate) fn pop_due(&mut self, limit: i64) -> Option<(i64, u32)> {
        loop {
            if let Some((at, slots)) = self.taking.as_mut()
                && *at <= self.first
                && let Some(slot) = slots.pop()
            {
                if *at > limit {
                    slots.push(slot);
                    return None;
                }
                self.len -= 1;
                return Some((*at, slot));
            }
            if self.first > limit {
                return None;
            }
            // the next bucket: taken whole (an earlier bucket being taken is merged back first)
            if let Some((at, slots)) = self.taking.take() {
                if slots.is_empty() {
                    self.recycle(slots);
                } else {
                    self.buckets.entry(at).or_default().extend(slots);
                    self.first = self.first.min(at);
                }
            }
            let (at, mut slots) = self.buckets.pop_first()?;
            self.first = self.buckets.first_key_value().map_or(i64::MAX, |(&k, _)| k);
            slots.sort_unstable_by(|a, b| b.cmp(a));
            self.taking = Some((at, slots));
        }
    }

    fn recycle(&mut self, mut slots: Vec<u32>) {
        if self.spare.len() < SPARE_BUCKETS {
            slots.clear();
            self.spare.push(slots);
        }
    }

    /// Number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Push(i64, u32),
        /// Pops every entry due by this limit, pushing a later entry after some of them (as
        /// the operator re-registers a group after finalising it).
        Drain(i64, i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0i64..20, 0u32..12).prop_map(|(d, s)| Op::Push(d * 5, s)),
            1 => (0i64..110, 0i64..8).prop_map(|(l, k)| Op::Drain(l, k)),
        ]
    }

    proptest! {
        /// Against a min-heap of the pairs: the same entries come out in the same order, and
        /// `next_due` is always the heap's top.
        #[test]
        fn entries_come_out_in_the_order_of_a_min_heap(ops in prop::collection::vec(op(), 1..200)) {
            let mut q = DueQueue::new();
            let mut heap = BinaryHeap::new();
            for op in ops {
                match op {
                    Op::Push(d, s) => {
                        q.push(d, s);
                        heap.push(Reverse((d, s)));
                    }
                    Op::Drain(limit, k) => {
                        let mut n = 0;
                        loop {
                            let want = match heap.peek() {
                                Some(&Reverse((d, s))) if d <= limit => Some((d, s)),
                                _ => None,
                            };
                            prop_assert_eq!(q.pop_due(limit), want);
                            let Some((d, s)) = want else { break };
                            heap.pop();
                            n += 1;
                            if n % 3 == 0 {
                                // re-registered: at the same instant or later
                                let later = d + k;
                                q.push(later, s);
                                heap.push(Reverse((later, s)));
                            }
                        }
                    }
                }
                prop_assert_eq!(q.len(), heap.len());
                prop_assert_eq!(q.next_due(), heap.peek().map_or(i64::MAX, |r| r.0.0));
            }
        }
    }

    #[test]
    fn an_empty_queue_has_nothing_due() {
        let mut q = DueQueue::new();
        assert_eq!(q.next_due(), i64::MAX);
        assert_eq!(q.pop_due(i64::MAX), None);
        q.push(10, 3);
        q.push(10, 1);
        q.push(5, 7);
        assert_eq!(q.next_due(), 5);
        assert_eq!(q.pop_due(4), None);
        assert_eq!(q.pop_due(10), Some((5, 7)));
        assert_eq!(q.pop_due(10), Some((10, 1)));
        assert_eq!(q.pop_due(10), Some((10, 3)));
        assert_eq!(q.pop_due(10), None);
        assert_eq!(q.next_due(), i64::MAX);
    }

    #[test]
    fn upcoming_names_the_entries_the_next_pops_of_the_bucket_return() {
        let mut q = DueQueue::new();
        for s in [7, 2, 9, 4, 1] {
            q.push(10, s);
        }
        q.push(20, 3);
        assert_eq!(q.upcoming(0), None, "no bucket taken yet");
        assert_eq!(q.pop_due(10), Some((10, 1)));
        let ahead: Vec<Option<u32>> = (0..5).map(|k| q.upcoming(k)).collect();
        let mut popped = Vec::new();
        while let Some((_, s)) = q.pop_due(10) {
            popped.push(Some(s));
        }
        popped.resize(5, None);
        assert_eq!(ahead, popped);
        assert_eq!(ahead, vec![Some(2), Some(4), Some(7), Some(9), None]);
    }
}
