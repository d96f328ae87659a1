//! A FIFO in fixed-size blocks: it grows a block at a time, so appending never copies the
//! entries already queued (a queue of one entry per record in range holds millions: doubling one
//! buffer would stall a record for milliseconds), and it gives memory back as it drains (one
//! emptied block is kept for reuse). The timer queues and the compact layout's log use it.

use std::collections::VecDeque;

#[cfg(test)]
use crate::time::Timestamp;

/// Entries per block.
const BLOCK: usize = 4096;

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Fifo<T> {
    /// Blocks in order, each of capacity `BLOCK`; every block but the first and the last is
    /// full, the first one is drained from its front.
    blocks: VecDeque<VecDeque<T>>,
    /// An emptied block, kept for the next one needed.
    spare: Option<VecDeque<T>>,
}

impl<T> Default for Fifo<T> {
    fn default() -> Fifo<T> {
        Fifo { blocks: VecDeque::new(), spare: None }
    }
}

impl<T> Fifo<T> {
    /// Number of entries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.blocks.iter().map(VecDeque::len).sum()
    }

    /// The first entry.
    #[inline]
    pub(super) fn front(&self) -> Option<&T> {
        self.blocks.front().and_then(VecDeque::front)
    }

    /// The last entry.
    #[inline]
    pub(super) fn back(&self) -> Option<&T> {
        self.blocks.back().and_then(VecDeque::back)
    }

    /// Entry `i` from the front.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        let first = self.blocks.front()?;
        match i.checked_sub(first.len()) {
            None => first.get(i),
            Some(j) => self.blocks.get(1 + j / BLOCK).and_then(|b| b.get(j % BLOCK)),
        }
    }

    /// Every entry, first to last.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.blocks.iter().flatten()
    }

    /// Appends an entry.
    #[inline]
    pub(super) fn push_back(&mut self, e: T) {
        match self.blocks.back_mut() {
            Some(b) if b.len() < BLOCK => b.push_back(e),
            _ => {
                let mut b = self.spare.take().unwrap_or_else(|| VecDeque::with_capacity(BLOCK));
                b.push_back(e);
                self.blocks.push_back(b);
            }
        }
    }

    /// Takes the first entry.
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<T> {
        let b = self.blocks.front_mut()?;
        let e = b.pop_front();
        if b.is_empty() {
            // An emptied block: kept for reuse (its capacity stays `BLOCK`).
            if let Some(b) = self.blocks.pop_front() {
                self.spare = Some(b);
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vecdeque_across_blocks() {
        let mut f = Fifo::default();
        let mut r: VecDeque<(Timestamp, u32)> = VecDeque::new();
        let mut x: u64 = 1;
        let mut n = 0i64;
        for step in 0..60_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Phases of growth and of draining, with empty moments in between.
            let quarter = (x >> 33).is_multiple_of(4);
            let push = if (step / 9000) % 2 == 0 { !quarter } else { quarter };
            if push {
                n += 1;
                f.push_back((Timestamp(n), (x >> 40) as u32));
                r.push_back((Timestamp(n), (x >> 40) as u32));
            } else {
                assert_eq!(f.pop_front(), r.pop_front());
            }
            assert_eq!(f.len(), r.len());
            assert_eq!(f.front(), r.front());
            assert_eq!(f.back(), r.back());
            for i in [0, 1, 8, BLOCK - 1, BLOCK, 3 * BLOCK + 5] {
                assert_eq!(f.get(i), r.get(i), "entry {i}");
            }
            assert!(f.iter().eq(r.iter()));
        }
    }
}
