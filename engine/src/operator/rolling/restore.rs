//! Restore: the keys of a snapshot ([`super::snapshot`]) added to the operator, each built once
//! in place. With a keep predicate (a re-split across a change of `parallelism`), a key that
//! another partition actor owns is skipped over in the bytes (its records are never built).
//!
//! Without a keep predicate the snapshot's segments are decoded on up to
//! [`RESTORE_THREADS`] threads (values, records, range aggregates, lifetime states and the
//! next timer of each key built there), then inserted into the key table on the calling thread
//! in the snapshot's order: the result is the one of a decode on one thread.

use super::RollingWindow;
use super::keys::KeyState;
use super::plan::Plan;
use super::snapshot::{MAGIC, MAGIC_V1, Reader};
use crate::operator::StateError;
use crate::time::Timestamp;
use crate::value::{GroupKey, KeyValue, Value};

/// Threads that decode one snapshot's segments at most (fewer when the machine has fewer
/// cores, or the snapshot fewer segments).
pub(super) const RESTORE_THREADS: usize = 4;

/// What every key of the snapshot needs to be decoded.
struct Shape<'p> {
    plan: &'p Plan,
    lanes: usize,
    parts: usize,
}

/// One key decoded from `r` (its hash left 0: the caller hashes it with the key table's
/// hasher): `None` when `keep` refuses it (its bytes are skipped).
fn decode_key(
    r: &mut Reader<'_>,
    shape: &Shape<'_>,
    keep: Option<&mut (dyn FnMut(&GroupKey) -> bool + '_)>,
) -> Result<Option<KeyState>, String> {
    let plan = shape.plan;
    let parts = r.u32()? as usize;
    if parts != shape.parts {
        return Err(format!("a key of {parts} values, expected {}", shape.parts));
    }
    let key = (0..parts).map(|_| r.value(0)).collect::<Result<Box<[Value]>, _>>()?;
    if let Some(keep) = keep
        && !keep(&GroupKey(key.iter().cloned().map(KeyValue).collect()))
    {
        r.skip_records(shape.lanes)?;
        r.skip_records(shape.lanes)?;
        r.take(8 * plan.bounded.len())?;
        for _ in 0..plan.lifetime.len() {
            r.bytes()?;
        }
        return Ok(None);
    }
    let pending = r.records(shape.lanes)?;
    let visible = r.records(shape.lanes)?;
    let mut st = plan.key_with(key, 0, pending, visible);
    for b in 0..plan.bounded.len() {
        let s = r.u64()? as usize;
        if s > st.visible.len() {
            return Err(format!("range start {s} past {} visible records", st.visible.len()));
        }
        st.starts[b] = s;
    }
    for l in 0..plan.lifetime.len() {
        let b = r.bytes()?;
        let f = &plan.measures[plan.lifetime[l]].func;
        st.lifetime[l] = f.state_from_bytes(b).map_err(|e| e.to_string())?;
    }
    plan.rebuild_ranges(&mut st);
    st.timer = plan.next_event(&st).0;
    Ok(Some(st))
}

/// Decodes the `n` keys of one segment, passing each kept one to `add`.
fn decode_segment(
    n: usize,
    bytes: &[u8],
    shape: &Shape<'_>,
    mut keep: Option<&mut (dyn FnMut(&GroupKey) -> bool + '_)>,
    add: &mut dyn FnMut(KeyState),
) -> Result<(), String> {
    let mut r = Reader::new(bytes);
    for _ in 0..n {
        if let Some(st) = decode_key(&mut r, shape, keep.as_deref_mut())? {
            add(st);
        }
    }
    if !r.b.is_empty() {
        return Err(format!("{} bytes after the last key of a segment", r.b.len()));
    }
    Ok(())
}

/// The segments of the bytes after the key count (`keys` keys in all): (keys, bytes) each.
/// Version 1 has one segment of every key.
fn segments<'a>(r: &mut Reader<'a>, keys: usize, segmented: bool) -> Result<Vec<(usize, &'a [u8])>, String> {
    if !segmented {
        return Ok(vec![(keys, r.take(r.b.len())?)]);
    }
    let mut out = Vec::with_capacity(keys / super::snapshot::SEGMENT_KEYS as usize + 1);
    let mut seen = 0usize;
    while seen < keys {
        let n = r.u32()? as usize;
        let bytes = r.u64()?;
        if n == 0 || bytes > r.b.len() as u64 || n.saturating_mul(4) as u64 > bytes {
            return Err(format!(
                "a segment of {n} keys in {bytes} bytes at key {seen} of {keys} ({} bytes left)",
                r.b.len()
            ));
        }
        out.push((n, r.take(bytes as usize)?));
        seen += n;
    }
    if seen != keys {
        return Err(format!("segments hold {seen} keys, the header says {keys}"));
    }
    Ok(out)
}

/// Contiguous runs of `segments` of about equal bytes, at most `threads`.
fn runs<'s, 'a>(segments: &'s [(usize, &'a [u8])], threads: usize) -> Vec<&'s [(usize, &'a [u8])]> {
    let total: usize = segments.iter().map(|(_, b)| b.len()).sum();
    let mut runs = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, (_, b)) in segments.iter().enumerate() {
        acc += b.len();
        if acc * threads >= total * (runs.len() + 1) && runs.len() + 1 < threads {
            runs.push(&segments[start..=i]);
            start = i + 1;
        }
    }
    runs.push(&segments[start..]);
    runs
}

/// Decodes every key of `segments` on up to [`RESTORE_THREADS`] threads (one contiguous run of
/// segments each, sent back a segment at a time), passing them to `add` on the calling thread
/// in the snapshot's order.
fn decode_parallel(
    segments: &[(usize, &[u8])],
    shape: &Shape<'_>,
    add: &mut dyn FnMut(KeyState),
) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = RESTORE_THREADS.min(cores).min(segments.len()).max(1);
    if threads == 1 {
        for &(n, bytes) in segments {
            decode_segment(n, bytes, shape, None, add)?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(threads);
        for run in runs(segments, threads) {
            let (tx, rx) = std::sync::mpsc::channel::<Result<Vec<KeyState>, String>>();
            scope.spawn(move || {
                for &(n, bytes) in run {
                    let mut keys = Vec::with_capacity(n);
                    let decoded = decode_segment(n, bytes, shape, None, &mut |st| keys.push(st)).map(|()| keys);
                    let failed = decoded.is_err();
                    // The receiver is gone only when another segment failed: stop.
                    if tx.send(decoded).is_err() || failed {
                        return;
                    }
                }
            });
            receivers.push((rx, run.len()));
        }
        for (rx, count) in receivers {
            for _ in 0..count {
                let keys = rx.recv().map_err(|_| "a decoding thread panicked".to_string())??;
                keys.into_iter().for_each(&mut *add);
            }
        }
        Ok(())
    })
}

impl RollingWindow {
    /// [`Operator::restore`](crate::operator::Operator::restore), keeping only the keys for
    /// which `keep` (when given) is true.
    pub(super) fn restore_from(
        &mut self,
        bytes: &[u8],
        keep: Option<&mut dyn FnMut(&GroupKey) -> bool>,
    ) -> Result<(), StateError> {
        let corrupt = |why: String| StateError::Corrupt { operator: "rolling_window", why };
        let mut r = Reader::new(bytes);
        let magic = r.take(MAGIC.len()).map_err(corrupt)?;
        let segmented = match magic {
            m if m == MAGIC => true,
            m if m == MAGIC_V1 => false,
            _ => return Err(corrupt("not a rolling-window snapshot (bad magic)".into())),
        };
        let lanes = self.plan.lanes.len();
        let shape = (r.u32().map_err(corrupt)?, r.u32().map_err(corrupt)?, r.u32().map_err(corrupt)?);
        if shape != (lanes as u32, self.plan.bounded.len() as u32, self.plan.lifetime.len() as u32) {
            return Err(corrupt(format!(
                "measures differ from the query's: (input columns, bounded, lifetime) = {shape:?}, expected ({lanes}, {}, {})",
                self.plan.bounded.len(),
                self.plan.lifetime.len()
            )));
        }
        let frontier = Timestamp(r.i64().map_err(corrupt)?);
        let watermark = Timestamp(r.i64().map_err(corrupt)?);
        let tracker = r.tracker().map_err(corrupt)?;
        let n = r.count(4).map_err(corrupt)?;
        let segments = segments(&mut r, n, segmented).map_err(corrupt)?;
        if !r.b.is_empty() {
            return Err(corrupt(format!("{} bytes after the last key", r.b.len())));
        }
        // Room for every key at once (a re-split keeps about its share): no rehash, no slab copy.
        self.keys.reserve(if keep.is_some() { n / 2 } else { n });
        let shape = Shape { plan: &self.plan, lanes, parts: self.cfg.key_columns.len() };
        let (keys, generation) = (&mut self.keys, self.snap_gen);
        let mut replaced = Vec::new();
        let mut add = |mut st: KeyState| {
            st.hash = keys.hash(st.key.iter());
            st.snap_mark = generation;
            // Groups of two snapshots are disjoint; should one repeat, the later one wins.
            // Its timer goes into the heap with every other key's at the end, in one heapify.
            if let (_, Some(old)) = keys.insert_or_replace(st) {
                replaced.push(old);
            }
        };
        match keep {
            None => decode_parallel(&segments, &shape, &mut add).map_err(corrupt)?,
            Some(keep) => {
                for &(count, bytes) in &segments {
                    decode_segment(count, bytes, &shape, Some(&mut *keep), &mut add).map_err(corrupt)?;
                }
            }
        }
        for mut old in replaced {
            // A snapshot in progress may still need the replaced key as it was.
            self.write_replaced(&mut old);
        }
        self.timers.rebuild(&self.keys);
        self.frontier = self.frontier.max(frontier);
        crate::operator::merge_trackers(&mut self.tracker, tracker);
        self.watermark = self.watermark.max(watermark);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::snapshot::{MAGIC_V1, SEGMENT_HEADER, SEGMENT_KEYS};
    use crate::aggregate::{AggKind, AggregateFn};
    use crate::operator::{Mode, Operator, Output, RollingMeasure, RollingWindow, RollingWindowConfig};
    use crate::schema::DataType;
    use crate::time::{Duration, Timestamp};
    use crate::value::{Record, Value};

    const S: i64 = 1_000_000;

    fn config() -> RollingWindowConfig {
        let f =
            |kind, input: Option<usize>| AggregateFn { kind, input, input_type: DataType::Long, name: String::new() };
        RollingWindowConfig {
            mode: Mode::RealTime,
            key_columns: vec![0],
            order_by: 1,
            frontier_delay: Duration(0),
            measures: vec![
                RollingMeasure { func: f(AggKind::Sum, Some(2)), over: Some(Duration(5 * S)) },
                RollingMeasure { func: f(AggKind::CountStar, None), over: None },
            ],
            watermark: None,
            compact: true,
        }
    }

    /// `keys` keys, a few records each (some visible, some pending).
    fn filled(keys: i64) -> RollingWindow {
        let mut op = RollingWindow::new(config());
        let mut out = Output::default();
        op.advance_clock(Timestamp(2 * S), &mut out);
        for i in 0..3 * keys {
            let t = (i % 4) * S;
            op.on_record(
                &Record::new(vec![
                    Value::Str(format!("k{}", i % keys).into()),
                    Value::Timestamp(Timestamp(t)),
                    Value::Long(i),
                ]),
                Timestamp::MIN,
                &mut out,
            );
        }
        op
    }

    /// Rows of both operators on the same further input, sorted.
    fn rows_after(op: &mut RollingWindow, keys: i64) -> Vec<String> {
        let mut out = Output::default();
        for i in 0..keys {
            op.on_record(
                &Record::new(vec![
                    Value::Str(format!("k{i}").into()),
                    Value::Timestamp(Timestamp(5 * S)),
                    Value::Long(1),
                ]),
                Timestamp::MIN,
                &mut out,
            );
        }
        op.advance_clock(Timestamp(100 * S), &mut out);
        let mut v: Vec<String> = out.rows.iter().map(|r| format!("{r:?}")).collect();
        v.sort();
        v
    }

    /// The same bytes without segment headers: the version-1 layout.
    fn as_version_1(bytes: &[u8], keys: usize) -> Vec<u8> {
        // magic, 3 x u32, 2 x i64, tracker none (u8 0), keys u64.
        let head = 8 + 12 + 16 + 1 + 8;
        assert_eq!(bytes[8 + 12 + 16], 0, "no tracker in this query");
        let mut v = MAGIC_V1.to_vec();
        v.extend_from_slice(&bytes[8..head]);
        let (mut at, mut seen) = (head, 0);
        while seen < keys {
            let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let len = u64::from_le_bytes(bytes[at + 4..at + SEGMENT_HEADER].try_into().unwrap()) as usize;
            v.extend_from_slice(&bytes[at + SEGMENT_HEADER..at + SEGMENT_HEADER + len]);
            at += SEGMENT_HEADER + len;
            seen += n;
        }
        assert_eq!(at, bytes.len());
        v
    }

    #[test]
    fn a_snapshot_of_several_segments_restores_on_threads_to_the_same_state() {
        let keys = 2 * SEGMENT_KEYS as i64 + 1000;
        let mut original = filled(keys);
        let bytes = original.snapshot();
        let mut incremental_op = filled(keys);
        assert!(incremental_op.begin_snapshot().is_none());
        let incremental = incremental_op.finish_snapshot().unwrap();
        let v1 = as_version_1(&bytes, keys as usize);
        let expected = rows_after(&mut original, keys);
        for (what, b) in [("one-shot", &bytes), ("incremental", &incremental), ("version 1", &v1)] {
            let mut restored = RollingWindow::new(config());
            restored.restore(b).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(restored.state_len(), keys as usize, "{what}");
            assert_eq!(restored.snapshot(), bytes, "{what}: the keys in the snapshot's order");
            assert_eq!(rows_after(&mut restored, keys), expected, "{what}");
        }
    }

    #[test]
    fn a_damaged_segment_header_is_refused() {
        let keys = SEGMENT_KEYS as i64 + 10;
        let bytes = filled(keys).snapshot();
        let head = 8 + 12 + 16 + 1 + 8;
        // The first segment's key count (8192 = 0x2000: to 0, then one key too many), its length.
        for (at, flip) in [(head + 1, 0x20u8), (head, 0x01), (head + 4, 0xff), (head + 11, 0x7f)] {
            let mut b = bytes.clone();
            b[at] ^= flip;
            assert!(RollingWindow::new(config()).restore(&b).is_err(), "byte {at} flipped by {flip:#x}");
        }
    }
}
