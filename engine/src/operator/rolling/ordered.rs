//! An ordered multiset of values with O(sqrt n)-ish insert / remove and O(n / B) rank selection:
//! a sorted list of sorted blocks. It keeps min, max and percentiles of a bounded rolling range
//! without rescanning the range per record (SEMANTICS.md "Rolling window": memory bounded by the
//! records in range).

use crate::value::{KeyValue, Value};

/// Largest block before a split.
const BLOCK: usize = 512;

/// A multiset of values in [`Value::total_cmp`] order.
#[derive(Clone, Debug, Default)]
pub struct OrderedMultiset {
    blocks: Vec<Vec<KeyValue>>,
    len: usize,
}

impl OrderedMultiset {
    /// Number of values (with multiplicity).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index of the block that holds (or would hold) `v`.
    fn block_for(&self, v: &KeyValue) -> usize {
        let i = self.blocks.partition_point(|b| b.last().is_some_and(|last| last < v));
        i.min(self.blocks.len().saturating_sub(1))
    }

    /// Adds one value.
    pub fn insert(&mut self, v: Value) {
        let v = KeyValue(v);
        self.len += 1;
        if self.blocks.is_empty() {
            self.blocks.push(vec![v]);
            return;
        }
        let bi = self.block_for(&v);
        let block = &mut self.blocks[bi];
        let pos = block.partition_point(|x| x <= &v);
        block.insert(pos, v);
        if block.len() > 2 * BLOCK {
            let tail = block.split_off(BLOCK);
            self.blocks.insert(bi + 1, tail);
        }
    }

    /// Removes one occurrence of `v`; `false` when absent.
    pub fn remove(&mut self, v: &Value) -> bool {
        let v = KeyValue(v.clone());
        if self.blocks.is_empty() {
            return false;
        }
        let mut bi = self.block_for(&v);
        // Equal values may straddle blocks; look in the first block that may hold one.
        while bi > 0 && self.blocks[bi - 1].last() == Some(&v) {
            bi -= 1;
        }
        let block = &mut self.blocks[bi];
        let pos = block.partition_point(|x| x < &v);
        if pos < block.len() && block[pos] == v {
            block.remove(pos);
            if block.is_empty() {
                self.blocks.remove(bi);
            }
            self.len -= 1;
            true
        } else {
            false
        }
    }

    /// The smallest value.
    pub fn min(&self) -> Option<&Value> {
        self.blocks.first().and_then(|b| b.first()).map(|k| &k.0)
    }

    /// The largest value.
    pub fn max(&self) -> Option<&Value> {
        self.blocks.last().and_then(|b| b.last()).map(|k| &k.0)
    }

    /// The value of rank `r` (0-based, ascending).
    pub fn select(&self, mut r: usize) -> Option<&Value> {
        for b in &self.blocks {
            if r < b.len() {
                return Some(&b[r].0);
            }
            r -= b.len();
        }
        None
    }

    /// The smallest value v such that at least `p` of the values are <= v (`p` in [0, 1]):
    /// rank `ceil(p * n) - 1`, clamped to the values; an input value, never interpolated (as
    /// Spark's `percentile_approx`).
    pub fn percentile(&self, p: f64) -> Option<&Value> {
        if self.len == 0 {
            return None;
        }
        let r = (p * self.len as f64).ceil() as usize;
        self.select(r.saturating_sub(1).min(self.len - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn behaves_as_a_sorted_vec(ops in proptest::collection::vec((any::<bool>(), 0i64..50), 0..3000)) {
            let mut m = OrderedMultiset::default();
            let mut reference: Vec<i64> = Vec::new();
            for (insert, v) in ops {
                if insert || reference.is_empty() {
                    m.insert(Value::Long(v));
                    let p = reference.partition_point(|x| *x <= v);
                    reference.insert(p, v);
                } else {
                    let present = reference.iter().position(|x| *x == v);
                    prop_assert_eq!(m.remove(&Value::Long(v)), present.is_some());
                    if let Some(i) = present { reference.remove(i); }
                }
                prop_assert_eq!(m.len(), reference.len());
            }
            prop_assert_eq!(m.min().and_then(Value::as_i64), reference.first().copied());
            prop_assert_eq!(m.max().and_then(Value::as_i64), reference.last().copied());
            for (i, v) in reference.iter().enumerate() {
                prop_assert_eq!(m.select(i).and_then(Value::as_i64), Some(*v));
            }
            if !reference.is_empty() {
                for p in [0.0, 0.1, 0.5, 0.9, 1.0] {
                    let expect = reference.iter().copied().find(|v| {
                        reference.iter().filter(|x| *x <= v).count() as f64 >= p * reference.len() as f64
                    });
                    prop_assert_eq!(m.percentile(p).and_then(Value::as_i64), expect, "p={}", p);
                }
            }
        }
    }
}
