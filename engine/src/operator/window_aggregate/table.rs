//! [`SlotTable`]: the index of interned groups, an open-addressing hash table (linear probing,
//! at most half full) of slot numbers. A bucket is one `u64` holding the high 32 bits of the
//! group's hash (which also place it: its home bucket is those bits modulo the capacity) and its
//! slot, so that a lookup usually reads one cache line, and that line is known from the hash
//! alone: [`SlotTable::prefetch`] starts loading it before the lookup (the first stage of the
//! group prefetch in `groups.rs`). Removal shifts the following entries back (no tombstones),
//! which the home bucket, recomputable from an entry, allows.

/// An empty bucket (an entry stores `slot + 1`, never 0, in its low half).
const EMPTY: u64 = 0;

/// Slot numbers by hash (see the module documentation). Capacity is a power of two, at most
/// 2^32 buckets (the hash's high 32 bits place an entry).
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    buckets: Vec<u64>,
    len: usize,
}

/// The high 32 bits of a hash: tag and placement.
#[inline]
fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
}

#[inline]
fn entry(hash: u64, slot: u32) -> u64 {
    (u64::from(tag(hash)) << 32) | (u64::from(slot) + 1)
}

#[inline]
fn entry_slot(e: u64) -> u32 {
    (e as u32).wrapping_sub(1)
}

impl SlotTable {
    #[inline]
    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    /// The home bucket of a hash (or of an entry, whose high half is its hash's).
    #[inline]
    fn home(&self, hash: u64) -> usize {
        tag(hash) as usize & self.mask()
    }

    /// Starts loading the home bucket of `hash` (a hint: reads nothing).
    /// The bytes of the buckets.
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of_val(&self.buckets[..])
    }

    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        if !self.buckets.is_empty() {
            crate::prefetch::line(self.buckets.as_ptr().wrapping_add(self.home(hash)).cast());
        }
    }

    /// The slots whose hash has `hash`'s high 32 bits, in probe order (candidates for `hash`).
    #[inline]
    pub(crate) fn candidates(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        let mask = self.mask();
        let want = tag(hash);
        let mut i = self.home(hash);
        let mut left = self.buckets.len();
        std::iter::from_fn(move || {
            while left > 0 {
                let e = self.buckets[i];
                if e == EMPTY {
                    return None;
                }
                left -= 1;
                i = (i + 1) & mask;
                if tag(e) == want {
                    return Some(entry_slot(e));
                }
            }
            None
        })
    }

    /// The first slot of `hash` for which `eq` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.candidates(hash).find(|&s| eq(s))
    }

    /// Adds `slot` under `hash` (the caller knows it is absent).
    pub(crate) fn insert(&mut self, hash: u64, slot: u32) {
        // At most half full: a lookup of an absent group (linear probing) then reads ~2.5
        // buckets on average, against ~8.5 at 3/4 full; a bucket is 8 bytes per group.
        if (self.len + 1) * 2 > self.buckets.len() {
            self.grow();
        }
        self.place(entry(hash, slot));
        self.len += 1;
    }

    fn place(&mut self, e: u64) {
        let mask = self.mask();
        let mut i = self.home(e);
        while self.buckets[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.buckets[i] = e;
    }

    #[cold]
    fn grow(&mut self) {
        crate::stall::note(crate::stall::Cause::TableGrowth);
        let cap = (self.buckets.len() * 2).max(16);
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; cap]);
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.place(e);
        }
    }

    /// Removes `slot`, stored under `hash`; nothing when absent.
    pub(crate) fn remove(&mut self, hash: u64, slot: u32) {
        if self.buckets.is_empty() {
            return;
        }
        let mask = self.mask();
        let want = entry(hash, slot);
        let mut i = self.home(hash);
        loop {
            let e = self.buckets[i];
            if e == EMPTY {
                return;
            }
            if e == want {
                break;
            }
            i = (i + 1) & mask;
        }
        // Backward shift: an entry after the hole moves into it unless its home lies
        // cyclically in (hole, its position].
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.buckets[j];
            if e == EMPTY {
                break;
            }
            let k = self.home(e);
            let stays = if i <= j { i < k && k <= j } else { i < k || k <= j };
            if !stays {
                self.buckets[i] = e;
                i = j;
            }
        }
        self.buckets[i] = EMPTY;
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against a map from slot to hash: after any sequence of inserts and removes, every
        /// slot present is found under its hash and no removed one is.
        #[test]
        fn the_table_finds_exactly_the_slots_a_map_holds(
            ops in prop::collection::vec((any::<bool>(), 0u32..64, 0u64..8), 1..300),
        ) {
            let mut t = SlotTable::default();
            let mut reference: HashMap<u32, u64> = HashMap::new();
            // few distinct hashes (high bits 0..8, shifted): long probe chains and collisions
            let hash_of = |h: u64| (h << 32) | 0x9e37;
            for (insert, slot, h) in ops {
                if insert {
                    if let std::collections::hash_map::Entry::Vacant(v) = reference.entry(slot) {
                        v.insert(hash_of(h));
                        t.insert(hash_of(h), slot);
                    }
                } else if let Some(h) = reference.remove(&slot) {
                    t.remove(h, slot);
                }
                for s in 0..64u32 {
                    match reference.get(&s) {
                        Some(&h) => prop_assert_eq!(t.find(h, |c| c == s), Some(s)),
                        None => {
                            for h in 0..8 {
                                prop_assert_eq!(t.find(hash_of(h), |c| c == s), None);
                            }
                        }
                    }
                }
                prop_assert_eq!(t.len, reference.len());
            }
        }
    }

    #[test]
    fn a_lookup_of_an_absent_hash_in_an_empty_or_full_table_ends() {
        let t = SlotTable::default();
        assert_eq!(t.find(7, |_| true), None);
        t.prefetch(7);
        let mut t = SlotTable::default();
        for s in 0..8u32 {
            t.insert(u64::from(s) << 32, s);
        }
        assert_eq!(t.buckets.len(), 16, "as full as it gets");
        assert_eq!(t.find(99 << 32, |_| true), None);
        assert_eq!(t.find(5 << 32, |s| s == 5), Some(5));
    }
}
