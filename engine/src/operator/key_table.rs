//! [`KeyTable`]: slot numbers of interned keys by hash, in shards that grow one at a time, so
//! that adding a key never moves more than a small share of the table (issue 28).
//!
//! One hash table of all keys rehashes every entry when it grows: at 100,000 keys, with the
//! hasher reading each key's hash back from its state (a cache miss per entry), that is
//! milliseconds for the record that added the key. Here the keys are spread over [`SHARDS`]
//! tables by bits of their hash that the tables' own placement does not use, and each entry
//! carries the high half of its hash beside its slot, so a shard grows without reading a state:
//! a growth moves `1 / SHARDS` of the entries, sequentially. A lookup costs the shard's header
//! (a short, hot array) more than one table's would.
//!
//! Within a shard, [`hashbrown::HashTable`] places an entry by a 64-bit hash made from the
//! stored high half ([`spread`]), the same at insertion, lookup and growth.

use hashbrown::HashTable;

/// Shards (a power of two).
pub(crate) const SHARDS: usize = 64;

/// An entry: the key's slot and the high 32 bits of its hash.
type Entry = (u32, u32);

/// The shard of a hash: bits 24..30, independent of the high half that places it in its shard.
#[inline]
fn shard(hash: u64) -> usize {
    (hash >> 24) as usize & (SHARDS - 1)
}

/// The high half of a hash, stored in the entry.
#[inline]
fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// The 64-bit hash a shard places a tag by (multiplicative: every bit of the tag reaches the
/// high bits hashbrown takes its control byte from).
#[inline]
fn spread(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(tag)
}

#[inline]
fn rehash(e: &Entry) -> u64 {
    spread(e.1)
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct KeyTable {
    /// Indexed by [`shard`] (an array: no bounds check).
    shards: Box<[HashTable<Entry>; SHARDS]>,
    len: usize,
}

impl Default for KeyTable {
    fn default() -> KeyTable {
        KeyTable { shards: Box::new(std::array::from_fn(|_| HashTable::new())), len: 0 }
    }
}

impl KeyTable {
    /// Keys held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The slot of the key hashed `hash` for which `eq(slot)` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let t = tag(hash);
        self.shards[shard(hash)].find(spread(t), |e| e.1 == t && eq(e.0)).map(|e| e.0)
    }

    /// The slot of the first key hashed like `hash` (its high half), reading the table only: a
    /// hint (for prefetching), right unless two keys share the high half.
    #[inline]
    pub(crate) fn first_hashed(&self, hash: u64) -> Option<u32> {
        let t = tag(hash);
        self.shards[shard(hash)].iter_hash(spread(t)).find(|e| e.1 == t).map(|e| e.0)
    }

    /// Whether adding a key to `hash`'s shard grows that shard (for the stall tracer).
    #[inline]
    pub(crate) fn grows_on_insert(&self, hash: u64) -> bool {
        let s = &self.shards[shard(hash)];
        s.len() == s.capacity()
    }

    /// Adds `slot` under `hash` (the caller knows no equal key is present).
    #[inline]
    pub(crate) fn insert(&mut self, hash: u64, slot: u32) {
        if self.grows_on_insert(hash) {
            crate::stall::note(crate::stall::Cause::TableGrowth);
        }
        let t = tag(hash);
        self.shards[shard(hash)].insert_unique(spread(t), (slot, t), rehash);
        self.len += 1;
    }

    /// The slot of the key hashed `hash` for which `eq` holds, or `slot` added under `hash`
    /// (one probe): the slot, and whether it was added.
    pub(crate) fn find_or_insert(&mut self, hash: u64, slot: u32, mut eq: impl FnMut(u32) -> bool) -> (u32, bool) {
        if self.grows_on_insert(hash) {
            crate::stall::note(crate::stall::Cause::TableGrowth);
        }
        let t = tag(hash);
        match self.shards[shard(hash)].entry(spread(t), |e| e.1 == t && eq(e.0), rehash) {
            hashbrown::hash_table::Entry::Occupied(e) => (e.get().0, false),
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert((slot, t));
                self.len += 1;
                (slot, true)
            }
        }
    }

    /// Removes `slot`, stored under `hash`; nothing when absent.
    #[inline]
    pub(crate) fn remove(&mut self, hash: u64, slot: u32) {
        let t = tag(hash);
        if let Ok(e) = self.shards[shard(hash)].find_entry(spread(t), |e| e.0 == slot) {
            e.remove();
            self.len -= 1;
        }
    }

    /// Room for `n` more keys, spread evenly over the shards (sized ahead: no shard grows on
    /// the per-record path until the keys outnumber it).
    pub(crate) fn reserve(&mut self, n: usize) {
        let mean = n.div_ceil(SHARDS);
        // the shards' share varies (binomially): room for its spread above the mean
        let per = mean + mean / 2 + 16;
        for s in self.shards.iter_mut() {
            s.reserve(per, rehash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn mix(k: u64) -> u64 {
        let mut x = k.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    #[test]
    fn finds_inserts_and_removes_as_a_map_would() {
        // keys 0..n with slot = key; hashes collide on purpose for multiples of 97 (same hash)
        let hash = |k: u64| if k.is_multiple_of(97) { 42 } else { mix(k) };
        let mut t = KeyTable::default();
        let mut reference: HashMap<u64, u32> = HashMap::new();
        for k in 0..20_000u64 {
            let slot = k as u32;
            assert_eq!(t.find_or_insert(hash(k), slot, |s| u64::from(s) == k), (slot, true));
            reference.insert(k, slot);
            assert_eq!(t.find_or_insert(hash(k), 0, |s| u64::from(s) == k), (slot, false), "present now");
        }
        for k in (0..20_000u64).step_by(3) {
            t.remove(hash(k), k as u32);
            reference.remove(&k);
        }
        t.remove(hash(1), 999_999); // absent: nothing
        assert_eq!(t.len(), reference.len());
        for k in 0..20_500u64 {
            assert_eq!(t.find(hash(k), |s| u64::from(s) == k), reference.get(&k).copied(), "key {k}");
        }
        for k in 20_000..21_000u64 {
            t.insert(hash(k), k as u32);
        }
        assert_eq!(t.find(hash(20_500), |s| s == 20_500), Some(20_500));
        assert_eq!(t.first_hashed(mix(20_501)), Some(20_501));
        assert_eq!(t.len(), reference.len() + 1000);
    }

    #[test]
    fn shards_share_the_keys_and_reserve_makes_room_ahead() {
        let mut t = KeyTable::default();
        t.reserve(10_000);
        let mut grew = 0;
        for k in 0..10_000u64 {
            grew += usize::from(t.grows_on_insert(mix(k)));
            t.insert(mix(k), k as u32);
        }
        assert_eq!(grew, 0, "reserved: no shard grew");
        let sizes: Vec<usize> = t.shards.iter().map(HashTable::len).collect();
        let (lo, hi) = (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
        assert!(lo > 100 && hi < 250, "keys spread over the shards: {lo}..{hi}");
    }
}
