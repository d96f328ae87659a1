//! Interned partition keys: a slab of per-key states, found by the hash of a record's key
//! columns without building a [`GroupKey`] per record.

use super::measure::Range;
use super::records::Records;
use crate::aggregate::AggState;
use crate::operator::key_table::KeyTable;
use crate::operator::paged::Paged;
use crate::operator::window_aggregate::key::{InlineKey, combine, hash_value};
use crate::time::Timestamp;
use crate::value::{GroupKey, KeyValue, Record, Value};

/// Fixed seeds: a key's hash (and so nothing observable, only the table's layout) is the same on
/// every run.
const SEEDS: [u64; 4] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89];

/// The state of one key. The fields read for every record come first (one cache line).
#[derive(Debug)]
#[repr(C)]
pub(super) struct KeyState {
    /// A single-column key, inline: compared without reading `key`.
    pub(super) inline: InlineKey,
    pub(super) hash: u64,
    /// The instant (frontier) at which the key is next due, as registered in the timers.
    pub(super) timer: Option<Timestamp>,
    /// Every record of the key in a bounded range whose instant of leaving it (µs) is above
    /// this has an entry in that range's timer queue ([`super::timers`]); `i64::MIN` for a new
    /// key.
    pub(super) queued_after: i64,
    /// Per bounded measure: `visible[..start]` have left its range.
    pub(super) starts: Box<[usize]>,
    /// Visible records that the longest bounded range still holds.
    pub(super) visible: Records,
    /// Per bounded measure, its state over `visible[start..]`.
    pub(super) ranges: Box<[Range]>,
    /// Per lifetime measure, its state.
    pub(super) lifetime: Box<[AggState]>,
    /// The `partition_by` values, in order.
    pub(super) key: Box<[Value]>,
    /// Records not yet visible (event time > the frontier the key was last settled at).
    pub(super) pending: Records,
    /// Micro-batch: the key changed in this batch and is in the dirty list.
    pub(super) dirty: bool,
    /// The generation of the last snapshot that holds the key or was begun after it was created
    /// ([`super::incremental`]).
    pub(super) snap_mark: u64,
}

impl KeyState {
    /// The key as a [`GroupKey`].
    pub(super) fn group_key(&self) -> GroupKey {
        GroupKey(self.key.iter().cloned().map(KeyValue).collect())
    }
}

/// The keys: a slab of states (indexes are stable while a key lives; freed slots are reused) and
/// a hash table of slab indexes. Both grow without moving much at once (issue 28): the slab in
/// blocks ([`Paged`]), the table a shard at a time ([`KeyTable`]).
#[derive(Debug)]
pub(super) struct Keys {
    table: KeyTable,
    pub(super) slots: Paged<Option<KeyState>>,
    free: Vec<u32>,
    hasher: ahash::RandomState,
}

impl Keys {
    pub(super) fn new() -> Keys {
        Keys {
            table: KeyTable::default(),
            slots: Paged::default(),
            free: Vec::new(),
            hasher: ahash::RandomState::with_seeds(SEEDS[0], SEEDS[1], SEEDS[2], SEEDS[3]),
        }
    }

    /// The keys `slots` (each at its index; `None`: a free slot) with `free` the free slots in
    /// the order they are to be reused (last first), as [`Keys::insert`] and [`Keys::remove`]
    /// would have left them.
    pub(super) fn from_slots(slots: Vec<Option<KeyState>>, free: Vec<u32>) -> Keys {
        let mut keys = Keys::new();
        let live = slots.iter().flatten().count();
        keys.table.reserve(live);
        for (i, st) in slots.iter().enumerate() {
            if let Some(st) = st {
                keys.table.insert(st.hash, i as u32);
            }
        }
        keys.slots = slots.into_iter().collect();
        keys.free = free;
        keys
    }

    /// Number of keys.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// The hash of the values `parts` (grouping equality: NaN = NaN, -0.0 = 0.0, as [`Value`]
    /// hashes): strings, integers and timestamps inline, other values through their `Hash`.
    #[inline]
    pub(super) fn hash<'a>(&self, parts: impl Iterator<Item = &'a Value>) -> u64 {
        parts.fold(SEEDS[0], |h, v| combine(h, hash_value(SEEDS[1], v, |o| self.hasher.hash_one(o))))
    }

    /// [`Keys::hash`] of `record`'s values in `columns`; one column (the common case) without
    /// the iterator.
    #[inline]
    pub(super) fn hash_record(&self, record: &Record, columns: &[usize]) -> u64 {
        match columns {
            [c] => combine(SEEDS[0], hash_value(SEEDS[1], &record.values[*c], |o| self.hasher.hash_one(o))),
            _ => self.hash(columns.iter().map(|&c| &record.values[c])),
        }
    }

    /// The slot of the key of `record` over `columns`, if present.
    #[inline]
    pub(super) fn find(&self, hash: u64, record: &Record, columns: &[usize]) -> Option<u32> {
        let slots = &self.slots;
        self.table.find(hash, |i| {
            slots[i as usize].as_ref().is_some_and(|s| {
                s.inline.matches(record, columns).unwrap_or_else(|| {
                    s.key.len() == columns.len() && s.key.iter().zip(columns).all(|(k, &c)| *k == record.values[c])
                })
            })
        })
    }

    /// The slot of the first key of the table hashed `hash` (the key of a record with that hash,
    /// unless two keys share it): reads the table only.
    #[inline]
    pub(super) fn slot_hashed(&self, hash: u64) -> Option<u32> {
        self.table.first_hashed(hash)
    }

    /// Starts loading the state in slot `i` (its first lines: the fields read per record).
    #[inline]
    pub(super) fn prefetch_slot(&self, i: u32) {
        self.slots.prefetch(i as usize);
    }

    /// Second step of a prefetch, once slot `i` is loaded ([`Keys::prefetch_slot`]): starts
    /// loading what the state points to: both ends of the visible records' event times (a
    /// record enters at the back and leaves at the front) and the boxes of lanes, ranges,
    /// lifetime states and key values.
    #[inline]
    pub(super) fn prefetch_boxes(&self, i: u32) {
        let Some(Some(st)) = self.slots.get(i as usize) else { return };
        st.visible.prefetch_times();
        crate::prefetch::line(st.starts.as_ptr().cast());
        // A range is larger than a line (min / max: its deque and ordered set side by side).
        crate::prefetch::lines(st.ranges.as_ptr(), std::mem::size_of_val(&*st.ranges));
        crate::prefetch::lines(st.lifetime.as_ptr(), std::mem::size_of_val(&*st.lifetime));
        crate::prefetch::line(st.key.as_ptr().cast());
    }

    /// Third step, once the boxes are loaded ([`Keys::prefetch_boxes`]): starts loading both
    /// ends of each lane of visible records and of each range's own buffers, and the string of
    /// the key's first value (every emitted row clones it).
    #[inline]
    pub(super) fn prefetch_leaves(&self, i: u32) {
        let Some(Some(st)) = self.slots.get(i as usize) else { return };
        st.visible.prefetch_lanes();
        for r in st.ranges.iter() {
            r.prefetch();
        }
        if let Some(Value::Str(s)) = st.key.first() {
            // The reference counts sit just before the bytes.
            crate::prefetch::line(s.as_ptr().wrapping_sub(16));
        }
    }

    /// Adds a key that is not present; returns its slot.
    pub(super) fn insert(&mut self, state: KeyState) -> u32 {
        let hash = state.hash;
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(state);
                i
            }
            None => {
                self.slots.push(Some(state));
                (self.slots.len() - 1) as u32
            }
        };
        self.table.insert(hash, i);
        i
    }

    /// Room for `n` more keys.
    pub(super) fn reserve(&mut self, n: usize) {
        self.table.reserve(n);
        self.slots.reserve(n.saturating_sub(self.free.len()));
    }

    /// Adds a key, or replaces the state of an equal key (one probe of the table); returns its
    /// slot and the state replaced.
    pub(super) fn insert_or_replace(&mut self, state: KeyState) -> (u32, Option<KeyState>) {
        let next = self.free.last().copied().unwrap_or(self.slots.len() as u32);
        let slots = &self.slots;
        let (i, added) = self
            .table
            .find_or_insert(state.hash, next, |i| slots[i as usize].as_ref().is_some_and(|s| s.key == state.key));
        if !added {
            return (i, self.slots[i as usize].replace(state));
        }
        if self.free.pop().is_none() {
            self.slots.push(Some(state));
        } else {
            self.slots[next as usize] = Some(state);
        }
        (next, None)
    }

    /// Removes the key in slot `i`.
    pub(super) fn remove(&mut self, i: u32) -> Option<KeyState> {
        let st = self.slots.get_mut(i as usize)?.take()?;
        self.table.remove(st.hash, i);
        self.free.push(i);
        Some(st)
    }

    #[inline]
    pub(super) fn get(&self, i: u32) -> Option<&KeyState> {
        self.slots.get(i as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, i: u32) -> Option<&mut KeyState> {
        self.slots.get_mut(i as usize).and_then(Option::as_mut)
    }

    /// Slots of every key, in slot order.
    pub(super) fn live(&self) -> impl Iterator<Item = (u32, &KeyState)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i as u32, s)))
    }
}
