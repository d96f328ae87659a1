//! [`Paged`]: a growable array of per-slot runs in fixed-size blocks, so that growing never
//! copies what it holds (issue 28).
//!
//! A `Vec` of per-key states doubles when full: at 100,000 keys of 200 bytes that is a 20 MB copy
//! into fresh memory, milliseconds during which the record that added the key waits (the stall
//! tracer found such records). Here slot `i` lives in block `i / BLOCK_SLOTS`, each block
//! allocated once at its full size when the first of its slots is pushed and never moved; the
//! list of blocks is all that grows by copying (8 bytes per 1,024 slots). Each slot holds a run
//! of `stride` elements (a key's several aggregate states side by side), contiguous within its
//! block. An index costs one more load (the block's pointer, from a short, hot list).

use std::ops::{Index, IndexMut};

/// Slots per block (a power of two).
pub(crate) const BLOCK_SLOTS: usize = 1024;
const SHIFT: u32 = BLOCK_SLOTS.trailing_zeros();

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct Paged<T> {
    blocks: Vec<Vec<T>>,
    /// Slots pushed.
    slots: usize,
    /// Elements per slot (at least 1 for the index to mean anything; 0 holds nothing).
    stride: usize,
}

impl<T> Default for Paged<T> {
    fn default() -> Paged<T> {
        Paged::with_stride(1)
    }
}

impl<T> Paged<T> {
    /// Empty, with `stride` elements per slot.
    pub(crate) fn with_stride(stride: usize) -> Paged<T> {
        Paged { blocks: Vec::new(), slots: 0, stride }
    }

    /// Slots pushed.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots
    }

    /// Appends a slot holding the elements of `run` (exactly `stride` of them; fewer or more
    /// would shift every later slot, so they are cut or the slot left short: callers pass
    /// `stride`).
    pub(crate) fn push_run(&mut self, run: impl IntoIterator<Item = T>) {
        if self.slots >> SHIFT == self.blocks.len() {
            // Allocated once at its full size: it never grows.
            self.blocks.push(Vec::with_capacity(BLOCK_SLOTS * self.stride));
        }
        if let Some(block) = self.blocks.get_mut(self.slots >> SHIFT) {
            block.extend(run.into_iter().take(self.stride));
        }
        self.slots += 1;
    }

    /// The run of slot `i`, if pushed.
    #[inline]
    pub(crate) fn run(&self, i: usize) -> Option<&[T]> {
        let at = (i & (BLOCK_SLOTS - 1)) * self.stride;
        self.blocks.get(i >> SHIFT).and_then(|b| b.get(at..at + self.stride))
    }

    /// The run of slot `i`, if pushed.
    #[inline]
    pub(crate) fn run_mut(&mut self, i: usize) -> Option<&mut [T]> {
        let at = (i & (BLOCK_SLOTS - 1)) * self.stride;
        let stride = self.stride;
        self.blocks.get_mut(i >> SHIFT).and_then(|b| b.get_mut(at..at + stride))
    }
}

impl<T> Paged<T> {
    /// Appends a slot of one element (stride 1).
    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        self.push_run(std::iter::once(value));
    }

    /// The element of slot `i` (stride 1), if pushed.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.blocks.get(i >> SHIFT).and_then(|b| b.get((i & (BLOCK_SLOTS - 1)) * self.stride))
    }

    /// The element of slot `i` (stride 1), if pushed.
    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let stride = self.stride;
        self.blocks.get_mut(i >> SHIFT).and_then(|b| b.get_mut((i & (BLOCK_SLOTS - 1)) * stride))
    }

    /// Every element, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.blocks.iter().flatten()
    }

    /// Every element of the slots `from..to`, in slot order.
    pub(crate) fn iter_slots_mut(&mut self, from: usize, to: usize) -> impl Iterator<Item = &mut T> {
        let stride = self.stride;
        let to = to.min(self.slots);
        let from = from.min(to);
        self.blocks.iter_mut().enumerate().flat_map(move |(b, block)| {
            let first = b << SHIFT;
            let lo = from.clamp(first, first + BLOCK_SLOTS) - first;
            let hi = to.clamp(first, first + BLOCK_SLOTS) - first;
            let (lo, hi) = ((lo * stride).min(block.len()), (hi * stride).min(block.len()));
            block[lo..hi].iter_mut()
        })
    }

    /// Allocates the blocks for `n` more slots now (sized ahead: no block is allocated on the
    /// per-record path until they are used).
    pub(crate) fn reserve(&mut self, n: usize) {
        let blocks = (self.slots + n).div_ceil(BLOCK_SLOTS);
        while self.blocks.len() < blocks {
            self.blocks.push(Vec::with_capacity(BLOCK_SLOTS * self.stride));
        }
    }

    /// Starts loading slot `i`'s run (a hint: reads nothing; a slot not pushed loads nothing or
    /// memory in vain).
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if self.stride == 0 {
            return;
        }
        if let Some(b) = self.blocks.get(i >> SHIFT) {
            let p = b.as_ptr().wrapping_add((i & (BLOCK_SLOTS - 1)) * self.stride);
            crate::prefetch::lines(p, self.stride * std::mem::size_of::<T>());
        }
    }

    /// Element `k` of slot `i`'s run.
    ///
    /// # Panics
    /// When slot `i` was not pushed or `k >= stride`, as a slice index out of bounds.
    #[inline]
    pub(crate) fn at(&self, i: usize, k: usize) -> &T {
        &self.blocks[i >> SHIFT][(i & (BLOCK_SLOTS - 1)) * self.stride + k]
    }

    /// Element `k` of slot `i`'s run.
    ///
    /// # Panics
    /// As [`Paged::at`].
    #[inline]
    pub(crate) fn at_mut(&mut self, i: usize, k: usize) -> &mut T {
        let stride = self.stride;
        &mut self.blocks[i >> SHIFT][(i & (BLOCK_SLOTS - 1)) * stride + k]
    }
}

impl<T> FromIterator<T> for Paged<T> {
    /// One element per slot (stride 1).
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Paged<T> {
        let mut p = Paged::with_stride(1);
        for v in iter {
            p.push(v);
        }
        p
    }
}

/// The element of slot `i` (stride 1).
///
/// # Panics
/// When slot `i` was not pushed, as a slice index out of bounds.
impl<T> Index<usize> for Paged<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.blocks[i >> SHIFT][(i & (BLOCK_SLOTS - 1)) * self.stride]
    }
}

/// The element of slot `i` (stride 1).
///
/// # Panics
/// When slot `i` was not pushed, as a slice index out of bounds.
impl<T> IndexMut<usize> for Paged<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        let stride = self.stride;
        &mut self.blocks[i >> SHIFT][(i & (BLOCK_SLOTS - 1)) * stride]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_their_place_and_blocks_never_move() {
        let mut p: Paged<u64> = Paged::default();
        let n = 3 * BLOCK_SLOTS + 17;
        let mut first_block = None;
        for i in 0..n {
            p.push(i as u64 * 3);
            if i == 0 {
                first_block = Some(p.run(0).map(<[u64]>::as_ptr));
            }
        }
        assert_eq!(p.len(), n);
        assert_eq!(first_block, Some(p.run(0).map(<[u64]>::as_ptr)), "the first block moved");
        for i in 0..n {
            assert_eq!(p[i], i as u64 * 3);
            assert_eq!(p.get(i), Some(&(i as u64 * 3)));
        }
        assert_eq!(p.get(n), None);
        assert_eq!(p.iter().copied().collect::<Vec<_>>(), (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
        p[5] = 1;
        *p.get_mut(BLOCK_SLOTS).expect("slot") = 2;
        assert_eq!((p[5], p[BLOCK_SLOTS]), (1, 2));
    }

    #[test]
    fn runs_of_a_stride_are_contiguous_and_ranges_cross_blocks() {
        let mut p: Paged<u32> = Paged::with_stride(3);
        let n = 2 * BLOCK_SLOTS + 5;
        for i in 0..n as u32 {
            p.push_run([i, i + 100, i + 200]);
        }
        assert_eq!(p.run(BLOCK_SLOTS + 1), Some(&[1025, 1125, 1225][..]));
        p.run_mut(7).expect("slot")[2] = 9;
        assert_eq!(p.run(7), Some(&[7, 107, 9][..]));
        let from = BLOCK_SLOTS - 2;
        let to = BLOCK_SLOTS + 2;
        let got: Vec<u32> = p.iter_slots_mut(from, to).map(|v| *v).collect();
        let want: Vec<u32> = (from as u32..to as u32).flat_map(|i| [i, i + 100, i + 200]).collect();
        assert_eq!(got, want);
        assert_eq!(p.iter_slots_mut(n - 1, n + 10).count(), 3, "a range past the end stops at it");
    }

    #[test]
    fn reserve_allocates_blocks_ahead() {
        let mut p: Paged<u8> = Paged::default();
        p.reserve(BLOCK_SLOTS + 1);
        assert_eq!(p.blocks.len(), 2);
        let second = p.blocks[1].as_ptr();
        for i in 0..2 * BLOCK_SLOTS {
            p.push(i as u8);
        }
        assert_eq!(p.blocks.len(), 2, "the reserved blocks took the slots");
        assert_eq!(p.blocks[1].as_ptr(), second);
        assert_eq!((p[BLOCK_SLOTS + 3], *p.at(7, 0)), (3, 7));
        p.push(9);
        assert_eq!((p.blocks.len(), p.len(), p[2 * BLOCK_SLOTS]), (3, 2 * BLOCK_SLOTS + 1, 9));
    }
}
