//! Routing: a record's partition key is hashed to 64 bits with fixed seeds (the same on every
//! run and machine, so a checkpoint's key ranges mean the same thing after a restart); the hash
//! space is cut into `parallelism` equal, contiguous key ranges, one per partition actor.

use std::hash::{BuildHasher, Hash, Hasher};

use eddy_engine::Record;
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
