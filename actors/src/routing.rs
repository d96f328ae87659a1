//! Routing: a record's partition key is hashed to 64 bits with fixed seeds (the same on every
//! run and machine, so a checkpoint's key ranges mean the same thing after a restart); the hash
//! space is cut into `parallelism` equal, contiguous key ranges, one per partition actor.

use std::hash::{BuildHasher, Hash, Hasher};

use eddy_engine::Record;
use eddy_engine::value::GroupKey;
use eddy_engine::value::Value;

/// A 64-bit partition-key hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyHash(pub u64);

/// Index of a partition actor (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId(pub usize);

/// Hashes the key columns of records and maps hashes to key ranges.
#[derive(Clone, Debug)]
pub struct Router {
    key_columns: Vec<usize>,
    partitions: usize,
    state: ahash::RandomState,
}

impl Router {
    /// A router over `key_columns` to `partitions` (>= 1) key ranges.
    pub fn new(key_columns: Vec<usize>, partitions: usize) -> Router {
        Router {
            key_columns,
            partitions: partitions.max(1),
            state: ahash::RandomState::with_seeds(0x6564_6479, 0x7061_7274, 0x6b65_7973, 0x7261_6e67),
        }
    }

    /// The hash of `record`'s partition key.
    pub fn hash(&self, record: &Record) -> KeyHash {
        let mut h = self.state.build_hasher();
        for &c in &self.key_columns {
            record.values.get(c).unwrap_or(&Value::Null).hash(&mut h);
        }
        KeyHash(h.finish())
    }

    /// The hash of a partition key held in operator state: the same as [`Router::hash`] of any
    /// record whose routing columns hold these values, in order (so state restored from a
    /// checkpoint is re-split across key ranges exactly as records are routed).
    pub fn hash_key(&self, key: &GroupKey) -> KeyHash {
        let mut h = self.state.build_hasher();
        for v in key.values() {
            v.hash(&mut h);
        }
        KeyHash(h.finish())
    }

    /// The partition actor owning `hash`: key range `i` is `[i * 2^64 / n, (i + 1) * 2^64 / n)`.
    pub fn partition_of(&self, hash: KeyHash) -> PartitionId {
        PartitionId(((hash.0 as u128 * self.partitions as u128) >> 64) as usize)
    }

    /// The partition actor owning `record`.
    pub fn route(&self, record: &Record) -> PartitionId {
        if self.partitions == 1 {
            return PartitionId(0);
        }
        self.partition_of(self.hash(record))
    }

    /// Number of key ranges.
    pub fn partitions(&self) -> usize {
        self.partitions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_cover_the_hash_space_in_order() {
        let r = Router::new(vec![0], 4);
        assert_eq!(r.partition_of(KeyHash(0)), PartitionId(0));
        assert_eq!(r.partition_of(KeyHash(u64::MAX / 4)), PartitionId(0));
        assert_eq!(r.partition_of(KeyHash(u64::MAX / 4 + 1)), PartitionId(1));
        assert_eq!(r.partition_of(KeyHash(u64::MAX)), PartitionId(3));
    }

    #[test]
    fn a_group_key_hashes_as_the_records_it_came_from() {
        use eddy_engine::Timestamp;
        let r = Router::new(vec![2, 0], 8);
        let values = [
            Value::Null,
            Value::Long(-3),
            Value::Double(2.5),
            Value::Str("ключ".into()),
            Value::Timestamp(Timestamp(1_700_000_000_000_000)),
            Value::Bool(true),
        ];
        for a in &values {
            for b in &values {
                let rec = Record::new(vec![a.clone(), Value::Long(99), b.clone()]);
                let key = GroupKey::of(&rec, &[2, 0]);
                assert_eq!(r.hash_key(&key), r.hash(&rec), "{a:?} {b:?}");
                assert_eq!(r.partition_of(r.hash_key(&key)), r.route(&rec));
            }
        }
    }

    #[test]
    fn same_key_same_partition_and_spread_over_ranges() {
        let r = Router::new(vec![0], 4);
        let mut seen = [0usize; 4];
        for i in 0..1000 {
            let rec = Record::new(vec![Value::Str(format!("user-{i}").into())]);
            let p = r.route(&rec);
            assert_eq!(p, r.route(&rec.clone()));
            seen[p.0] += 1;
        }
        assert!(seen.iter().all(|&n| n > 150), "{seen:?}");
    }
}
