//! Interned groups: the values of a record's `group_by` columns are hashed in place and probed in
//! a table of slot numbers ([`SlotTable`]); a [`GroupKey`] is built (and its values cloned) only when a
//! group is first seen. Per-record work is one hash of the key columns and one probe, without
//! allocating. Slots of removed groups are reused, keeping their payload's buffers.

use std::cell::Cell;
use std::hash::BuildHasher;

use hashbrown::DefaultHashBuilder;

use super::key::{InlineKey, K1, fold, hash_value, same_value};
use super::table::SlotTable;

use crate::value::{GroupKey, Record, Value};

/// Bytes at the start of a slot that the per-record path reads: the inline key and the
/// payload's first fields (the operators keep their parked last pane / session and its inline
/// states there: tests check the offsets), loaded by [`Groups::prefetch`].
pub(crate) const HOT_BYTES: usize = 128;

/// The bytes of a group table (its index and slots, as allocated) from which prefetching its
/// groups pays (a window aggregate's [`crate::operator::Operator::prefetch_pays`]): below, the
/// table stays in the caches and a record's lookup rarely misses, so a prefetch only adds its
/// own work (hashing a record twice, the bookkeeping that matches a lookup to its prefetch).
/// ClickHouse's aggregator draws the same line at 4x the L2 cache's size, 1 MiB with its default
/// L2 of 256 KiB (`getMinBytesForPrefetch`); this is that default, fixed so that a run does the
/// same work on every machine.
pub const PREFETCH_MIN_BYTES: usize = 1 << 20;

/// Records between the two stages of [`Groups::prefetch`] (the table bucket, then the
/// slot). A power of two.
const PREFETCH_STAGES: usize = 4;
const _: () = assert!(PREFETCH_STAGES.is_power_of_two());

/// Prefetches remembered by [`Groups::prefetch_record`] and not yet looked up (a power of two,
/// more than [`PREFETCH_STAGES`] plus the records a loop prefetches ahead,
/// [`crate::operator::PREFETCH_DISTANCE`]).
const RECENT: usize = 16;
const _: () = assert!(RECENT.is_power_of_two() && RECENT > PREFETCH_STAGES + crate::operator::PREFETCH_DISTANCE);

/// One group: its key (`None` while the slot is free) and its payload. The inline key and the
/// payload's first fields share the slot's first [`HOT_BYTES`] (the per-record path).
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct Slot<T> {
    inline: InlineKey,
    /// The operator's state for the group.
    pub(crate) data: T,
    hash: u64,
    key: Option<GroupKey>,
}

/// Groups by key, each at a stable slot number until removed.
#[derive(Debug)]
pub(crate) struct Groups<T> {
    table: SlotTable,
    /// What the prefetches of records not yet looked up learnt, in the order they were made
    /// (prefetch `s` at `s % RECENT`): the lookup of a record reuses the hash its prefetch
    /// computed and the slot its second stage found ([`Groups::find_prefetched`]). Records are
    /// looked up in the order they were prefetched, so a record's entry is the oldest one left
    /// or close to it. (An index by the address of the record's values instead put records of
    /// a regular allocation stride on the same entries: half the lookups of the tumbling
    /// benchmark found their entry overwritten.)
    recent: [Cell<Recent>; RECENT],
    /// Prefetches made so far: the sequence number of the next.
    prefetched: Cell<usize>,
    /// Sequence number of the oldest entry of `recent` not yet looked up (entries older than
    /// `prefetched - RECENT` are overwritten: never below that).
    looked_up: Cell<usize>,
    /// `(hash, slot)` of the group [`Groups::find`] found last (slot `u32::MAX`: none), tried
    /// before the table: consecutive records often share their key (a hot key, an aggregate
    /// without `group_by`). Always a live slot: [`Groups::remove`] forgets it.
    last: Cell<(u64, u32)>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
    /// foldhash, hashbrown's default, for key values without a fast path. Its random seed only
    /// shapes the table: output order never depends on it (slots are numbered in arrival order).
    hasher: DefaultHashBuilder,
    /// Seed of the fast paths (drawn from `hasher`).
    seed: u64,
}

impl<T: Default> Default for Groups<T> {
    fn default() -> Self {
        let hasher = DefaultHashBuilder::default();
        Groups {
            seed: hasher.hash_one(0x5eed_u64),
            table: SlotTable::default(),
            recent: Default::default(),
            prefetched: Cell::new(0),
            looked_up: Cell::new(0),
            last: Cell::new((0, u32::MAX)),
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            hasher,
        }
    }
}

/// Whether the slot's group is `record`'s at `cols` (grouping equality, as [`Value`]'s).
#[inline(always)]
fn slot_matches<T>(slot: &Slot<T>, record: &Record, cols: &[usize]) -> bool {
    // Only live slots are in the table: an inline key is compared without reading the key (at
    // the slot's end, another cache line).
    slot.inline.matches(record, cols).unwrap_or_else(|| {
        let Some(key) = &slot.key else { return false };
        key.0.len() == cols.len() && key.0.iter().zip(cols).all(|(k, &c)| same_value(&k.0, &record.values[c]))
    })
}

/// What the prefetch of a record learnt ([`Groups::recent`]).
#[derive(Clone, Copy, Debug)]
struct Recent {
    /// Address of the record's values.
    addr: usize,
    /// Hash of its key columns.
    hash: u64,
    /// The first slot of the table under `hash` when the prefetch's second stage looked
    /// (`u32::MAX`: none, or not looked yet). A candidate only: checked against the record's key.
    slot: u32,
}

impl Default for Recent {
    fn default() -> Recent {
        Recent { addr: 0, hash: 0, slot: u32::MAX }
    }
}

/// The entry of [`Groups::recent`] for prefetch number `s`.
#[inline(always)]
fn recent_index(s: usize) -> usize {
    s & (RECENT - 1)
}

impl<T: Default> Groups<T> {
    /// The hash of `record`'s values at `cols` (equal to [`Groups::hash_key`] of its key).
    #[inline(always)]
    pub(crate) fn hash_record(&self, record: &Record, cols: &[usize]) -> u64 {
        match cols {
            [c] => self.hash_value(&record.values[*c]),
            _ => cols.iter().fold(self.seed, |h, &c| fold(h ^ self.hash_value(&record.values[c]), K1)),
        }
    }

    /// The hash of a key.
    pub(crate) fn hash_key(&self, key: &GroupKey) -> u64 {
        match &key.0[..] {
            [k] => self.hash_value(&k.0),
            ks => ks.iter().fold(self.seed, |h, k| fold(h ^ self.hash_value(&k.0), K1)),
        }
    }

    /// One value's hash, consistent with [`Value`]'s grouping equality: inline for strings,
    /// integers and timestamps, [`Value`]'s own `Hash` (NaN and -0.0 normalised) otherwise.
    #[inline(always)]
    fn hash_value(&self, v: &Value) -> u64 {
        hash_value(self.seed, v, |other| self.hash_other(other))
    }

    /// [`Value`]'s own hash (the values without a fast path).
    #[inline(never)]
    fn hash_other(&self, v: &Value) -> u64 {
        self.hasher.hash_one(v)
    }

    /// Whether prefetching groups pays: the table's index and slots take at least
    /// [`PREFETCH_MIN_BYTES`]. Only ever turns from `false` to `true` (neither shrinks).
    #[inline]
    pub(crate) fn prefetch_pays(&self) -> bool {
        self.slots.capacity() * std::mem::size_of::<Slot<T>>() + self.table.bytes() >= PREFETCH_MIN_BYTES
    }

    /// [`Groups::prefetch`] for `record`: hashes it, remembering the hash for
    /// [`Groups::find_prefetched`].
    #[inline]
    pub(crate) fn prefetch_record(&self, record: &Record, cols: &[usize]) {
        let hash = self.hash_record(record, cols);
        let addr = record.values.as_ptr() as usize;
        let s = self.prefetched.get();
        self.recent[recent_index(s)].set(Recent { addr, hash, slot: u32::MAX });
        self.prefetched.set(s + 1);
        if s + 1 - self.looked_up.get() > RECENT {
            // the oldest entry was overwritten: its record was never looked up
            self.looked_up.set(s + 1 - RECENT);
        }
        self.prefetch(s, hash);
    }

    /// Software prefetch for the record of prefetch number `s`, hashed `hash`, that comes
    /// soon (see [`crate::operator::Operator::prefetch`]), in two stages so that no cache miss of
    /// the lookup waits on another: this call starts loading the table bucket of `hash`, and
    /// looks up the hash of the record prefetched [`PREFETCH_STAGES`] calls ago (its bucket
    /// loaded by now) to start loading the first [`HOT_BYTES`] of its group's slot, remembering
    /// that slot for [`Groups::find_prefetched`]. Reads the table, never a slot.
    #[inline(always)]
    fn prefetch(&self, s: usize, hash: u64) {
        self.table.prefetch(hash);
        let Some(earlier) = s.checked_sub(PREFETCH_STAGES) else { return };
        // (entry `earlier` is still there: `RECENT > PREFETCH_STAGES`)
        let entry = &self.recent[recent_index(earlier)];
        let mut e = entry.get();
        if let Some(c) = self.table.candidates(e.hash).next()
            && let Some(slot) = self.slots.get(c as usize)
        {
            crate::prefetch::lines(slot, std::mem::size_of::<Slot<T>>().min(HOT_BYTES));
            e.slot = c;
            entry.set(e);
        }
    }

    /// The slot of `record`'s group if it exists, from what its prefetch learnt: the slot the
    /// prefetch found, when it holds `record`'s key (no table lookup), else a lookup under the
    /// hash the prefetch computed, else (no prefetch of a record at this address waits) under
    /// `record`'s hash. The entries from the oldest not looked up to `record`'s are dropped:
    /// their records were never looked up. A slot found is right (slots are matched by key, a
    /// free slot matches nothing, and a key has one slot); `None` is not final (the remembered
    /// hash may be that of another record once at the same address): retry with
    /// [`Groups::find_or_insert`] under [`Groups::hash_record`].
    #[inline(always)]
    pub(crate) fn find_prefetched(&self, record: &Record, cols: &[usize]) -> Option<u32> {
        let addr = record.values.as_ptr() as usize;
        let end = self.prefetched.get();
        let mut s = self.looked_up.get();
        while s < end {
            let e = self.recent[recent_index(s)].get();
            s += 1;
            if e.addr == addr {
                self.looked_up.set(s);
                if let Some(slot) = self.slots.get(e.slot as usize)
                    && slot_matches(slot, record, cols)
                {
                    return Some(e.slot);
                }
                return self.find(e.hash, record, cols);
            }
        }
        self.find(self.hash_record(record, cols), record, cols)
    }

    /// [`Groups::find_or_insert`] from what `record`'s prefetch learnt
    /// ([`Groups::find_prefetched`]); only when that finds nothing is the record hashed again
    /// and its group looked up (and created when absent) under its own hash. `true` when created.
    #[inline(always)]
    pub(crate) fn find_or_insert_prefetched(&mut self, record: &Record, cols: &[usize]) -> (u32, bool) {
        if let Some(s) = self.find_prefetched(record, cols) {
            return (s, false);
        }
        self.find_or_insert(self.hash_record(record, cols), record, cols)
    }

    /// The slot of `record`'s group, if it exists (`hash` from [`Groups::hash_record`], or one
    /// remembered by a prefetch: a slot found is then right, `None` is not final).
    #[inline]
    pub(crate) fn find(&self, hash: u64, record: &Record, cols: &[usize]) -> Option<u32> {
        let slots = &self.slots;
        let (last_hash, last) = self.last.get();
        if last_hash == hash
            && let Some(slot) = slots.get(last as usize)
            && slot_matches(slot, record, cols)
        {
            return Some(last);
        }
        let found = self.table.find(hash, |s| slot_matches(&slots[s as usize], record, cols));
        if let Some(s) = found {
            self.last.set((hash, s));
        }
        found
    }

    /// The slot of `record`'s group, created (with the payload left by the slot's last group,
    /// or a default one) when absent; `true` when created.
    #[inline]
    pub(crate) fn find_or_insert(&mut self, hash: u64, record: &Record, cols: &[usize]) -> (u32, bool) {
        if let Some(s) = self.find(hash, record, cols) {
            return (s, false);
        }
        (self.insert(hash, GroupKey::of_grouping(record, cols)), true)
    }

    /// The slot of `key`'s group, created when absent; `true` when created.
    pub(crate) fn find_or_insert_key(&mut self, key: GroupKey) -> (u32, bool) {
        let hash = self.hash_key(&key);
        let slots = &self.slots;
        if let Some(s) = self.table.find(hash, |s| slots[s as usize].key.as_ref() == Some(&key)) {
            return (s, false);
        }
        (self.insert(hash, key), true)
    }

    fn insert(&mut self, hash: u64, key: GroupKey) -> u32 {
        let inline = InlineKey::of(&key);
        let slot = match self.free.pop() {
            Some(s) => {
                let e = &mut self.slots[s as usize];
                e.hash = hash;
                e.inline = inline;
                e.key = Some(key);
                s
            }
            None => {
                let s = u32::try_from(self.slots.len()).expect("fewer than 2^32 groups per operator");
                crate::stall::note_vec_growth(&self.slots);
                self.slots.push(Slot { inline, data: T::default(), hash, key: Some(key) });
                s
            }
        };
        self.table.insert(hash, slot);
        self.live += 1;
        slot
    }

    /// Removes a live group; its payload stays in the slot for the next group to reuse (the
    /// caller empties it first).
    pub(crate) fn remove(&mut self, slot: u32) {
        let e = &mut self.slots[slot as usize];
        if e.key.take().is_none() {
            return;
        }
        // a free slot matches no record ([`slot_matches`] then compares the absent key): a
        // slot remembered by a prefetch may be freed before the record comes
        e.inline = InlineKey::No;
        self.table.remove(e.hash, slot);
        if self.last.get().1 == slot {
            self.last.set((0, u32::MAX));
        }
        self.free.push(slot);
        self.live -= 1;
    }

    /// Starts loading `slot` whole (at most [`crate::prefetch::MAX_LINES`] lines; nothing for a
    /// slot past the end): for a group about to be visited by its expiry, which reads the key
    /// and the payload's bookkeeping past [`HOT_BYTES`].
    #[inline]
    pub(crate) fn prefetch_slot(&self, slot: u32) {
        if let Some(e) = self.slots.get(slot as usize) {
            crate::prefetch::lines(e, std::mem::size_of::<Slot<T>>());
        }
    }

    /// Starts loading the table bucket of the group in `slot` (read from the slot: call once the
    /// slot is loaded), which [`Groups::remove`] updates.
    #[inline]
    pub(crate) fn prefetch_bucket(&self, slot: u32) {
        if let Some(e) = self.slots.get(slot as usize) {
            self.table.prefetch(e.hash);
        }
    }

    /// Whether `slot` holds a group.
    #[inline]
    pub(crate) fn is_live(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_some_and(|e| e.key.is_some())
    }

    /// The key of a live group.
    ///
    /// # Panics
    /// When the slot is free (a bug of the caller).
    #[inline]
    pub(crate) fn key(&self, slot: u32) -> &GroupKey {
        self.slots[slot as usize].key.as_ref().expect("a live group")
    }

    /// The payload of a slot.
    #[inline]
    pub(crate) fn get(&self, slot: u32) -> &T {
        &self.slots[slot as usize].data
    }

    /// The payload of a slot, mutable.
    #[inline]
    pub(crate) fn get_mut(&mut self, slot: u32) -> &mut T {
        &mut self.slots[slot as usize].data
    }

    /// The key and the payload of a live slot, the payload mutable.
    #[inline]
    pub(crate) fn key_and_data_mut(&mut self, slot: u32) -> (&GroupKey, &mut T) {
        let e = &mut self.slots[slot as usize];
        (e.key.as_ref().expect("a live group"), &mut e.data)
    }

    /// Offset of the payload in a slot (bytes; see [`HOT_BYTES`]).
    pub(crate) const DATA_OFFSET: usize = std::mem::offset_of!(Slot<T>, data);

    /// Number of live groups.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Live slots, in slot order.
    pub(crate) fn live_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().enumerate().filter(|(_, e)| e.key.is_some()).map(|(i, _)| i as u32)
    }

    /// Live slots ordered by key (complete-mode output and snapshots are deterministic).
    pub(crate) fn sorted_slots(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.live_slots().collect();
        v.sort_by(|&a, &b| self.key(a).cmp(self.key(b)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    fn rec(k: &str, x: f64) -> Record {
        Record::new(vec![Value::Str(k.into()), Value::Double(x)])
    }

    /// The entry of the last prefetch.
    fn last_prefetch<T: Default>(g: &Groups<T>) -> Recent {
        g.recent[recent_index(g.prefetched.get() - 1)].get()
    }

    #[test]
    fn a_stale_prefetch_never_misplaces_a_group() {
        let mut g: Groups<u32> = Groups::default();
        let cols = [0usize];
        let (sa, _) = g.find_or_insert(g.hash_record(&rec("a", 0.0), &cols), &rec("a", 0.0), &cols);
        let mut r = rec("a", 0.0);
        g.prefetch_record(&r, &cols);
        assert_eq!(g.find_or_insert_prefetched(&r, &cols), (sa, false));
        // prefetched, then the same allocation holds another key before its lookup: what the
        // prefetch remembered is stale
        g.prefetch_record(&r, &cols);
        r.values[0] = Value::Str("b".into());
        assert_ne!(last_prefetch(&g).hash, g.hash_record(&r, &cols), "the remembered hash is stale");
        let (sb, new) = g.find_or_insert_prefetched(&r, &cols);
        assert!(new);
        assert_ne!(sb, sa);
        // created under its own hash: found from a record built apart, and found again (not
        // created twice) through another stale prefetch
        assert_eq!(g.find(g.hash_record(&rec("b", 1.0), &cols), &rec("b", 1.0), &cols), Some(sb));
        r.values[0] = Value::Str("a".into());
        g.prefetch_record(&r, &cols);
        r.values[0] = Value::Str("b".into());
        assert_eq!(g.find_or_insert_prefetched(&r, &cols), (sb, false));
        // back to the first key, prefetched as the second: still the first key's group
        g.prefetch_record(&r, &cols);
        r.values[0] = Value::Str("a".into());
        assert_eq!(g.find_or_insert_prefetched(&r, &cols), (sa, false));
        // and without a prefetch
        assert_eq!(g.find_or_insert_prefetched(&r, &cols), (sa, false));
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn records_find_their_own_prefetch_in_prefetch_order() {
        let mut g: Groups<u32> = Groups::default();
        let cols = [0usize];
        let recs: Vec<Record> = (0..40).map(|i| rec(&format!("k{}", i % 7), 0.0)).collect();
        let slots: Vec<u32> = recs.iter().map(|r| g.find_or_insert(g.hash_record(r, &cols), r, &cols).0).collect();
        // as `prefetch_ahead` runs a batch: record i + 8 prefetched before record i is looked
        // up, the first 8 never prefetched; records 20 and 21 prefetched but never looked up
        let distance = crate::operator::PREFETCH_DISTANCE;
        for i in 0..recs.len() {
            if let Some(r) = recs.get(i + distance) {
                g.prefetch_record(r, &cols);
            }
            if i == 20 || i == 21 {
                continue;
            }
            let before = g.looked_up.get();
            assert_eq!(g.find_prefetched(&recs[i], &cols), Some(slots[i]));
            if i >= distance {
                // its own entry, found: it and the ones before it are done
                assert!(g.looked_up.get() > before, "record {i} found no prefetch");
                assert_eq!(g.recent[recent_index(g.looked_up.get() - 1)].get().addr, recs[i].values.as_ptr() as usize);
            } else {
                assert_eq!(g.looked_up.get(), before, "record {i} was never prefetched");
            }
        }
        assert_eq!(g.looked_up.get(), g.prefetched.get());
        // once the second stage ran (after `PREFETCH_STAGES` more prefetches), the entry holds
        // the record's slot
        for r in &recs[..=PREFETCH_STAGES] {
            g.prefetch_record(r, &cols);
        }
        let first = g.recent[recent_index(g.looked_up.get())].get();
        assert_eq!(first.addr, recs[0].values.as_ptr() as usize);
        assert_eq!(first.slot, slots[0]);
    }

    #[test]
    fn the_slot_a_prefetch_found_is_used_only_while_it_holds_the_record_s_key() {
        let mut g: Groups<u32> = Groups::default();
        let cols = [0usize];
        let a = rec("a", 0.0);
        let (sa, _) = g.find_or_insert(g.hash_record(&a, &cols), &a, &cols);
        let others: Vec<Record> = (0..PREFETCH_STAGES).map(|i| rec(&format!("o{i}"), 0.0)).collect();
        let prefetch_a = |g: &Groups<u32>| {
            g.prefetch_record(&a, &cols);
            let at = recent_index(g.prefetched.get() - 1);
            for o in &others {
                g.prefetch_record(o, &cols); // the last one runs the second stage for `a`
            }
            g.recent[at].get().slot
        };
        assert_eq!(prefetch_a(&g), sa, "the second stage remembered a's slot");
        assert_eq!(g.find_prefetched(&a, &cols), Some(sa));
        // removed: the remembered slot matches nothing, though it still holds a's payload
        assert_eq!(prefetch_a(&g), sa);
        g.remove(sa);
        assert_eq!(g.find_prefetched(&a, &cols), None);
        // a back (in the freed slot), remembered, removed again, and the slot reused by
        // another key: the remembered slot holds b, not a
        assert_eq!(g.find_or_insert(g.hash_record(&a, &cols), &a, &cols), (sa, true));
        assert_eq!(prefetch_a(&g), sa);
        g.remove(sa);
        let b = rec("b", 0.0);
        let (sb, new) = g.find_or_insert(g.hash_record(&b, &cols), &b, &cols);
        assert!(new);
        assert_eq!(sb, sa, "the slot is reused");
        assert_eq!(g.find_prefetched(&a, &cols), None);
        // a record never prefetched is looked up under its own hash
        assert_eq!(g.find_prefetched(&rec("b", 1.0), &cols), Some(sb));
        // a back under a new slot: found through the remembered hash
        let (sa2, new) = g.find_or_insert(g.hash_record(&a, &cols), &a, &cols);
        assert!(new);
        assert_ne!(sa2, sb);
        g.prefetch_record(&a, &cols);
        assert_eq!(g.find_prefetched(&a, &cols), Some(sa2));
    }

    #[test]
    fn prefetching_pays_from_a_table_of_a_mebibyte_on() {
        let mut g: Groups<[u64; 8]> = Groups::default();
        let cols = [0usize];
        let key = |k: usize| rec(&format!("k{k}"), 0.0);
        assert!(!g.prefetch_pays(), "an empty table");
        // 1,000 groups of at most 256 bytes a slot: a quarter of a mebibyte at most
        assert!(std::mem::size_of::<Slot<[u64; 8]>>() <= 256);
        for k in 0..1_000 {
            g.find_or_insert(g.hash_record(&key(k), &cols), &key(k), &cols);
        }
        assert!(!g.prefetch_pays(), "1,000 groups");
        // 20,000 groups of at least 64 bytes a slot and 8 bytes an index entry: more than 1 MiB
        for k in 1_000..20_000 {
            g.find_or_insert(g.hash_record(&key(k), &cols), &key(k), &cols);
        }
        assert!(g.prefetch_pays(), "20,000 groups");
        // the table keeps its size when groups go: prefetching still pays for the next ones
        for k in 0..20_000 {
            if let Some(s) = g.find(g.hash_record(&key(k), &cols), &key(k), &cols) {
                g.remove(s);
            }
        }
        assert_eq!(g.live_slots().count(), 0);
        assert!(g.prefetch_pays());
    }

    #[test]
    fn the_group_found_last_is_never_returned_once_removed_or_for_another_key() {
        let mut g: Groups<u32> = Groups::default();
        let cols = [0usize];
        let (a, b) = (rec("a", 0.0), rec("b", 0.0));
        let (ha, hb) = (g.hash_record(&a, &cols), g.hash_record(&b, &cols));
        let (sa, _) = g.find_or_insert(ha, &a, &cols);
        assert_eq!(g.find(ha, &a, &cols), Some(sa)); // now the one found last
        // the same hash with another key (a stale hint): not the group found last
        assert_eq!(g.find(ha, &b, &cols), None);
        g.remove(sa);
        assert_eq!(g.find(ha, &a, &cols), None);
        // b takes a's old slot: a's hash and key still find nothing, b's find b
        let (sb, new) = g.find_or_insert(hb, &b, &cols);
        assert!(new);
        assert_eq!(sb, sa, "the slot is reused");
        assert_eq!(g.find(ha, &a, &cols), None);
        assert_eq!(g.find(hb, &b, &cols), Some(sb));
        assert_eq!(g.find(hb, &b, &cols), Some(sb));
    }

    #[test]
    fn a_group_is_found_by_value_and_its_slot_reused_after_removal() {
        let mut g: Groups<u32> = Groups::default();
        let cols = [0usize, 1];
        let a = rec("a", 1.0);
        let h = g.hash_record(&a, &cols);
        let (s, new) = g.find_or_insert(h, &a, &cols);
        assert!(new);
        // an equal record built apart (another Arc) and -0.0 == 0.0 grouping
        let a2 = rec("a", 1.0);
        assert_eq!(g.find_or_insert(g.hash_record(&a2, &cols), &a2, &cols), (s, false));
        let z = rec("z", 0.0);
        let (sz, _) = g.find_or_insert(g.hash_record(&z, &cols), &z, &cols);
        let nz = rec("z", -0.0);
        assert_eq!(g.find(g.hash_record(&nz, &cols), &nz, &cols), Some(sz));
        assert_eq!(g.hash_key(g.key(s)), h, "a key hashes as the record it came from");
        assert_eq!(g.len(), 2);
        g.remove(s);
        assert!(!g.is_live(s));
        assert_eq!(g.find(h, &a, &cols), None);
        let b = rec("b", 2.0);
        let (sb, new) = g.find_or_insert(g.hash_record(&b, &cols), &b, &cols);
        assert!(new);
        assert_eq!(sb, s, "the freed slot is reused");
        assert_eq!(g.find_or_insert_key(GroupKey::of(&b, &cols)), (sb, false));
        assert_eq!(g.sorted_slots(), vec![sb, sz]);
    }

    #[test]
    fn single_column_keys_of_every_kind_are_found_by_value() {
        let long = "a string longer than sixteen bytes";
        let values = [
            Value::Str("k".into()),
            Value::Str("0123456789abcdef".into()),
            Value::Str(long.into()),
            Value::Long(7),
            Value::Int(7),
            Value::Timestamp(crate::time::Timestamp(7)),
            Value::Null,
            Value::Double(f64::NAN),
            Value::Bool(true),
        ];
        let mut g: Groups<()> = Groups::default();
        let recs: Vec<Record> = values.iter().map(|v| Record::new(vec![v.clone()])).collect();
        let slots: Vec<u32> = recs.iter().map(|r| g.find_or_insert(g.hash_record(r, &[0]), r, &[0]).0).collect();
        for (i, v) in values.iter().enumerate() {
            // a copy built apart (no shared allocation) finds the same group, and only it
            let copy = Record::new(vec![match v {
                Value::Str(s) => Value::Str(s.to_string().into()),
                o => o.clone(),
            }]);
            assert_eq!(g.find(g.hash_record(&copy, &[0]), &copy, &[0]), Some(slots[i]), "{v:?}");
        }
        assert_eq!(slots.iter().collect::<std::collections::HashSet<_>>().len(), values.len());
    }

    #[test]
    fn strings_hash_by_content_and_every_length_spreads() {
        let g: Groups<()> = Groups::default();
        let mut seen = std::collections::HashSet::new();
        for n in 0..40usize {
            let s: String = (0..n).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let a = g.hash_value(&Value::Str(s.clone().into()));
            assert_eq!(a, g.hash_value(&Value::Str(s.clone().into())), "same content, same hash");
            assert!(seen.insert(a), "length {n} collides");
            if n > 0 {
                let mut t = s.into_bytes();
                t[n - 1] ^= 1;
                let b = g.hash_value(&Value::Str(String::from_utf8(t).unwrap_or_default().into()));
                assert_ne!(a, b, "last byte of {n}");
            }
        }
        // keys of several columns hash as their records do
        let r = Record::new(vec![Value::Str("x".into()), Value::Long(3), Value::Double(f64::NAN)]);
        let cols = [0usize, 1, 2];
        assert_eq!(g.hash_record(&r, &cols), g.hash_key(&GroupKey::of(&r, &cols)));
        assert_eq!(g.hash_value(&Value::Double(-0.0)), g.hash_value(&Value::Double(0.0)));
    }
}
