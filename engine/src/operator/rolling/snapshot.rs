//! The rolling window's snapshot bytes: a compact little-endian format, written and read in one
//! pass (no intermediate tree). Derived state (range aggregates, timers) is not stored: it is
//! rebuilt from the records on restore. Keys come in any order (an incremental snapshot writes
//! a key early when a record is about to change it: [`super::incremental`]), in segments of at
//! most [`SEGMENT_KEYS`] keys, each led by its key count and byte length, so a restore finds the
//! segments without decoding them and decodes them on several threads ([`super::restore`]).
//!
//! ```text
//! magic "EDDYRW02"
//! lanes u32, bounded u32, lifetime u32
//! frontier i64, watermark i64
//! tracker: u8 (0 none | 1 some), delay i64, u8 (0 | 1) + max event time i64
//! keys u64, then segments until `keys` keys are read:
//!   segment: keys u32, bytes u64, then its keys (in those bytes), per key:
//!   parts u32, values
//!   pending: n u64, n x (time i64, lanes x cell)
//!   visible: n u64, n x (time i64, lanes x cell)      (sorted by time)
//!   bounded x start u64
//!   lifetime x (len u32, AggState bytes)
//! cell: 0 null | 1 f64 | 2 i64 | 3 value
//! value: 0 null | 1 bool u8 | 2 int i32 | 3 long i64 | 4 float f32 | 5 double f64
//!        | 6 string (len u32, UTF-8) | 7 timestamp i64 | 8 window (i64, i64) | 9 list (n u32, values)
//! ```
//!
//! Version 1 (magic "EDDYRW01", still read) has no segments: the keys follow the count directly.

use super::keys::KeyState;
use super::records::{Cell, Records};
use crate::time::{Duration, Timestamp};
use crate::value::Value;
use crate::watermark::WatermarkTracker;

pub(super) const MAGIC: &[u8; 8] = b"EDDYRW02";
/// The magic of the format without segments (read only).
pub(super) const MAGIC_V1: &[u8; 8] = b"EDDYRW01";

/// Keys per segment: enough that a segment's header (12 bytes) is noise, few enough that a
/// million keys make a hundred segments to share among threads.
pub(super) const SEGMENT_KEYS: u32 = 8192;

/// Length of a segment's header (keys u32, bytes u64).
pub(super) const SEGMENT_HEADER: usize = 12;
/// Lists inside a value nest at most this deep (inputs never hold lists at all).
const MAX_LIST_DEPTH: usize = 8;

/// Appends little-endian fields.
pub(super) struct Writer {
    pub(super) out: Vec<u8>,
    /// The open segment: offset of its header, keys in it.
    segment: Option<(usize, u32)>,
}

impl Writer {
    /// An empty writer with room for `capacity` bytes.
    pub(super) fn new(capacity: usize) -> Writer {
        Writer { out: Vec::with_capacity(capacity), segment: None }
    }

    /// A writer into `buffer`, emptied, its capacity kept as it is (the caller checked it is
    /// enough: growing a buffer of tens of megabytes copies it whole); without one, a new
    /// buffer of `capacity` bytes.
    pub(super) fn reusing(buffer: Option<Vec<u8>>, capacity: usize) -> Writer {
        match buffer {
            Some(mut out) => {
                out.clear();
                Writer { out, segment: None }
            }
            None => Writer::new(capacity),
        }
    }

    /// The bytes, the last segment closed.
    pub(super) fn finish(mut self) -> Vec<u8> {
        self.close_segment();
        self.out
    }

    fn close_segment(&mut self) {
        if let Some((at, keys)) = self.segment.take() {
            let bytes = (self.out.len() - at - SEGMENT_HEADER) as u64;
            self.out[at..at + 4].copy_from_slice(&keys.to_le_bytes());
            self.out[at + 4..at + SEGMENT_HEADER].copy_from_slice(&bytes.to_le_bytes());
        }
    }

    pub(super) fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.out.extend_from_slice(b);
    }

    /// The fields before the keys, with a key count of `keys`; returns the offset of the count
    /// (so an incremental snapshot can correct it when it finishes).
    pub(super) fn header(
        &mut self,
        shape: (usize, usize, usize),
        frontier: Timestamp,
        watermark: Timestamp,
        tracker: Option<&WatermarkTracker>,
        keys: usize,
    ) -> usize {
        self.out.extend_from_slice(MAGIC);
        self.u32(shape.0 as u32);
        self.u32(shape.1 as u32);
        self.u32(shape.2 as u32);
        self.i64(frontier.0);
        self.i64(watermark.0);
        self.tracker(tracker);
        let at = self.out.len();
        self.u64(keys as u64);
        at
    }

    /// Overwrites the key count written by [`Writer::header`] at offset `at`.
    pub(super) fn set_count(&mut self, at: usize, keys: usize) {
        self.out[at..at + 8].copy_from_slice(&(keys as u64).to_le_bytes());
    }

    /// One key: its values, records, range starts and lifetime states (in the open segment).
    pub(super) fn key(&mut self, st: &KeyState) {
        match &mut self.segment {
            Some((_, n)) if *n < SEGMENT_KEYS => *n += 1,
            _ => {
                self.close_segment();
                self.segment = Some((self.out.len(), 1));
                self.out.extend_from_slice(&[0; SEGMENT_HEADER]);
            }
        }
        self.u32(st.key.len() as u32);
        for v in st.key.iter() {
            self.value(v);
        }
        self.records(&st.pending);
        self.records(&st.visible);
        for &s in st.starts.iter() {
            self.u64(s as u64);
        }
        for a in st.lifetime.iter() {
            self.bytes(&a.to_bytes());
        }
    }

    pub(super) fn tracker(&mut self, t: Option<&WatermarkTracker>) {
        match t {
            None => self.u8(0),
            Some(t) => {
                self.u8(1);
                self.i64(t.delay().0);
                match t.max_event_time() {
                    None => self.u8(0),
                    Some(m) => {
                        self.u8(1);
                        self.i64(m.0);
                    }
                }
            }
        }
    }

    pub(super) fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.u8(0),
            Value::Bool(b) => {
                self.u8(1);
                self.u8(*b as u8);
            }
            Value::Int(x) => {
                self.u8(2);
                self.out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Long(x) => {
                self.u8(3);
                self.i64(*x);
            }
            Value::Float(x) => {
                self.u8(4);
                self.out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Double(x) => {
                self.u8(5);
                self.out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Str(s) => {
                self.u8(6);
                self.bytes(s.as_bytes());
            }
            Value::Timestamp(t) => {
                self.u8(7);
                self.i64(t.0);
            }
            Value::Window { start, end } => {
                self.u8(8);
                self.i64(start.0);
                self.i64(end.0);
            }
            Value::Decimal(d) => {
                self.u8(10);
                self.out.extend_from_slice(&d.unscaled.to_le_bytes());
                self.u8(d.scale);
            }
            Value::List(l) => {
                self.u8(9);
                self.u32(l.len() as u32);
                for v in l.iter() {
                    self.value(v);
                }
            }
            Value::Date(d) => {
                self.u8(11);
                self.out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Struct(ty, fields) => {
                // the type as its field list (struct type ids are per process)
                self.u8(12);
                self.bytes(serde_json::to_string(ty).unwrap_or_default().as_bytes());
                self.u32(fields.len() as u32);
                for v in fields.iter() {
                    self.value(v);
                }
            }
        }
    }

    fn cell(&mut self, c: &Cell) {
        match c {
            Cell::Null => self.u8(0),
            Cell::F(x) => {
                self.u8(1);
                self.out.extend_from_slice(&x.to_le_bytes());
            }
            Cell::I(x) => {
                self.u8(2);
                self.i64(*x);
            }
            Cell::V(v) => {
                self.u8(3);
                self.value(v);
            }
        }
    }

    pub(super) fn records(&mut self, r: &Records) {
        self.u64(r.len() as u64);
        for (t, cells) in r.iter() {
            self.i64(t);
            for c in cells {
                self.cell(c);
            }
        }
    }
}

/// Reads what [`Writer`] wrote; every error says what was cut or wrong.
pub(super) struct Reader<'a> {
    pub(super) b: &'a [u8],
    /// The cells of one record, reused from record to record.
    cells: Vec<Cell>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, cells: Vec::new() }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err(format!("cut short: {n} bytes needed, {} left", self.b.len()));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(super) fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(super) fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(super) fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub(super) fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A count of items of at least `min_size` bytes each, checked against the bytes left (so a
    /// corrupt count cannot make a huge allocation).
    pub(super) fn count(&mut self, min_size: usize) -> Result<usize, String> {
        let n = self.u64()?;
        if n.saturating_mul(min_size.max(1) as u64) > self.b.len() as u64 {
            return Err(format!("a count of {n} items does not fit in the {} bytes left", self.b.len()));
        }
        Ok(n as usize)
    }

    pub(super) fn tracker(&mut self) -> Result<Option<WatermarkTracker>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => {
                let mut t = WatermarkTracker::new(Duration(self.i64()?));
                match self.u8()? {
                    0 => {}
                    1 => t.observe(Timestamp(self.i64()?)),
                    x => return Err(format!("bad tracker tag {x}")),
                }
                Ok(Some(t))
            }
            x => Err(format!("bad tracker tag {x}")),
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> Result<Value, String> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Bool(self.u8()? != 0),
            2 => Value::Int(i32::from_le_bytes(self.array()?)),
            3 => Value::Long(self.i64()?),
            4 => Value::Float(f32::from_le_bytes(self.array()?)),
            5 => Value::Double(f64::from_le_bytes(self.array()?)),
            6 => {
                let s = std::str::from_utf8(self.bytes()?).map_err(|e| format!("a string is not UTF-8: {e}"))?;
                Value::Str(s.into())
            }
            7 => Value::Timestamp(Timestamp(self.i64()?)),
            10 => {
                let unscaled = i128::from_le_bytes(self.array()?);
                let scale = u8::from_le_bytes(self.array()?);
                Value::Decimal(crate::decimal::Decimal::new(unscaled, scale))
            }
            8 => Value::Window { start: Timestamp(self.i64()?), end: Timestamp(self.i64()?) },
            9 if depth < MAX_LIST_DEPTH => {
                let n = self.u32()? as usize;
                if n > self.b.len() {
                    return Err(format!("a list of {n} values does not fit in the {} bytes left", self.b.len()));
                }
                let items = (0..n).map(|_| self.value(depth + 1)).collect::<Result<Vec<_>, _>>()?;
                Value::List(items.into())
            }
            11 => Value::Date(i32::from_le_bytes(self.array()?)),
            12 if depth < MAX_LIST_DEPTH => {
                let ty: crate::schema::StructType =
                    serde_json::from_slice(self.bytes()?).map_err(|e| format!("a struct type: {e}"))?;
                let n = self.u32()? as usize;
                if n > self.b.len() {
                    return Err(format!("a struct of {n} values does not fit in the {} bytes left", self.b.len()));
                }
                let items = (0..n).map(|_| self.value(depth + 1)).collect::<Result<Vec<_>, _>>()?;
                Value::Struct(ty, items.into())
            }
            x => return Err(format!("bad value tag {x}")),
        })
    }

    fn cell(&mut self) -> Result<Cell, String> {
        Ok(match self.u8()? {
            0 => Cell::Null,
            1 => Cell::F(f64::from_le_bytes(self.array()?)),
            2 => Cell::I(self.i64()?),
            3 => Cell::V(Box::new(self.value(0)?)),
            x => return Err(format!("bad cell tag {x}")),
        })
    }

    /// Skips a value (as [`Reader::value`] reads it, nothing built).
    fn skip_value(&mut self, depth: usize) -> Result<(), String> {
        match self.u8()? {
            0 => {}
            1 => {
                self.take(1)?;
            }
            2 | 4 | 11 => {
                self.take(4)?;
            }
            10 => {
                self.take(17)?;
            }
            3 | 5 | 7 => {
                self.take(8)?;
            }
            6 => {
                self.bytes()?;
            }
            8 => {
                self.take(16)?;
            }
            9 if depth < MAX_LIST_DEPTH => {
                for _ in 0..self.u32()? {
                    self.skip_value(depth + 1)?;
                }
            }
            12 if depth < MAX_LIST_DEPTH => {
                self.bytes()?;
                for _ in 0..self.u32()? {
                    self.skip_value(depth + 1)?;
                }
            }
            x => return Err(format!("bad value tag {x}")),
        }
        Ok(())
    }

    /// Skips what [`Reader::records`] reads, building nothing.
    pub(super) fn skip_records(&mut self, lanes: usize) -> Result<(), String> {
        let n = self.count(8 + lanes)?;
        for _ in 0..n {
            self.take(8)?;
            for _ in 0..lanes {
                match self.u8()? {
                    0 => {}
                    1 | 2 => {
                        self.take(8)?;
                    }
                    3 => self.skip_value(0)?,
                    x => return Err(format!("bad cell tag {x}")),
                }
            }
        }
        Ok(())
    }

    /// Records with `lanes` cells each, which must come sorted by time.
    pub(super) fn records(&mut self, lanes: usize) -> Result<Records, String> {
        let n = self.count(8 + lanes)?;
        let mut r = Records::new(lanes);
        let mut cells = std::mem::take(&mut self.cells);
        for _ in 0..n {
            let t = self.i64()?;
            for _ in 0..lanes {
                cells.push(self.cell()?);
            }
            if r.insert(t, cells.drain(..)) + 1 != r.len() {
                return Err("records are not sorted by event time".into());
            }
        }
        self.cells = cells;
        Ok(r)
    }
}
