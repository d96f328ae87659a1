//! A FIFO of timer entries in fixed-size blocks: it grows a block at a time, so appending never
//! copies the entries already queued (a queue of one entry per record in range holds millions:
//! doubling one buffer would stall a record for milliseconds), and it gives memory back as it
//! drains (one emptied block is kept for reuse).

use std::collections::VecDeque;

use crate::time::Timestamp;

/// One entry: the instant (frontier) a key is due at, and its slot.
pub(super) type Entry = (Timestamp, u32);

/// Entries per block (64 KiB).
const BLOCK: usize = 4096;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct Fifo {
    /// Blocks in order; every block but the last is full (`BLOCK` entries).
    blocks: VecDeque<Vec<Entry>>,
    /// Entries of the first block already taken.
    head: usize,
    /// An emptied block, kept for the next one needed.
    spare: Option<Vec<Entry>>,
}

impl Fifo {
    /// Number of entries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum::<usize>() - self.head
    }

    /// The first entry.
    #[inline]
    pub(super) fn front(&self) -> Option<Entry> {
        self.blocks.front().and_then(|b| b.get(self.head)).copied()
    }

    /// The last entry.
    #[inline]
    pub(super) fn back(&self) -> Option<Entry> {
        let b = self.blocks.back()?;
        if self.blocks.len() == 1 && b.len() == self.head {
            return None;
        }
        b.last().copied()
    }

    /// Entry `i` from the front.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<Entry> {
        let at = self.head + i;
        self.blocks.get(at / BLOCK).and_then(|b| b.get(at % BLOCK)).copied()
    }

    /// Appends an entry.
    #[inline]
    pub(super) fn push_back(&mut self, e: Entry) {
        match self.blocks.back_mut() {
            Some(b) if b.len() < BLOCK => b.push(e),
            _ => {
                let mut b = self.spare.take().unwrap_or_else(|| Vec::with_capacity(BLOCK));
                b.push(e);
                self.blocks.push_back(b);
            }
        }
    }

    /// Takes the first entry.
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Entry> {
        let e = self.front()?;
        self.head += 1;
        if self.head == BLOCK {
            // A full block emptied: keep it for reuse.
            if let Some(mut b) = self.blocks.pop_front() {
                b.clear();
                self.spare = Some(b);
            }
            self.head = 0;
        } else if self.blocks.len() == 1 && self.blocks.front().is_some_and(|b| b.len() == self.head) {
            // The last entry taken: start the block over.
            if let Some(b) = self.blocks.front_mut() {
                b.clear();
            }
            self.head = 0;
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vecdeque_across_blocks() {
        let mut f = Fifo::default();
        let mut r: VecDeque<Entry> = VecDeque::new();
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
            assert_eq!(f.front(), r.front().copied());
            assert_eq!(f.back(), r.back().copied());
            for i in [0, 1, 8, BLOCK - 1, BLOCK, 3 * BLOCK + 5] {
                assert_eq!(f.get(i), r.get(i).copied(), "entry {i}");
            }
        }
    }
}
