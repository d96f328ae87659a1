//! Values and records: [`Value`] (one cell), [`Record`] (one decoded input row, in schema order),
//! [`GroupKey`] (the values of the partition-key columns), and [`Row`] (one output row).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::decimal::Decimal;
use crate::schema::StructType;
use crate::time::Timestamp;

mod text;
pub use text::{INLINE, Text};

/// One cell. A string's text is held in place when short and shared otherwise ([`Text`]), so
/// cloning a record or a key never copies more than a value's 24 bytes.
/// 24 bytes with no tag byte of its own: the tag is kept in the last byte, the length byte of a
/// `Text` held in place (values 0..=23; the other values name the other variants). Every other
/// variant's payload fits before it: 16 bytes at most, or a [`Decimal`]'s 20 (aligned to 4
/// bytes for it).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub enum Value {
    /// SQL NULL (also: a column missing from the input record).
    #[default]
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT.
    Int(i32),
    /// BIGINT.
    Long(i64),
    /// FLOAT.
    Float(f32),
    /// DOUBLE.
    Double(f64),
    /// TIMESTAMP (µs since the epoch).
    Timestamp(Timestamp),
    /// DECIMAL(p, s): at the column's scale (the precision is the column's type).
    Decimal(Decimal),
    /// DATE: days since 1970-01-01.
    Date(i32),
    /// A window `[start, end)` (output only).
    Window {
        /// Inclusive start.
        start: Timestamp,
        /// Exclusive end.
        end: Timestamp,
    },
    /// A STRUCT: its type (the field names) and one value per field, in order.
    Struct(StructType, Fields),
    /// An array (output only: approx_percentile with a list of percentages).
    List(Arc<[Value]>),
    /// STRING.
    Str(Text),
}

impl Value {
    /// Whether dropping this value frees memory or counts down a shared count: shared text, a
    /// STRUCT, a list. Every other value is plain data (numbers, a `Copy` struct, text held in
    /// place), whose drop does nothing. The match lists every variant, so a new one must be
    /// placed on one side or the other.
    #[inline(always)]
    pub(crate) fn owns_memory(&self) -> bool {
        match self {
            Value::Str(t) => !t.is_inline(),
            Value::Struct(..) | Value::List(_) => true,
            Value::Null
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Long(_)
            | Value::Float(_)
            | Value::Double(_)
            | Value::Timestamp(_)
            | Value::Decimal(_)
            | Value::Date(_)
            | Value::Window { .. } => false,
        }
    }

    /// Writes a copy of `self` over `slot`, which must be NULL, when `self` owns no memory
    /// (every variant but shared text, a STRUCT and a list); `false` (nothing written) otherwise.
    ///
    /// The copy is made as three words. A copy made by `clone` is cut by the compiler where it
    /// reads the tag (the last byte): the 7 bytes of text held in place before it then go through
    /// the stack as overlapping pieces, and reading those back waits for them (a store-forwarding
    /// stall, a dozen cycles or more: most of what `lower(key)` cost a record).
    #[inline(always)]
    pub(crate) fn copy_plain_over_null(&self, slot: &mut Value) -> bool {
        type Words = [std::mem::MaybeUninit<u64>; 3];
        const _: () = assert!(size_of::<Value>() == size_of::<Words>() && align_of::<Value>() == align_of::<Words>());
        if self.owns_memory() || !slot.is_null() {
            return false;
        }
        // SAFETY: `self` holds only plain data (numbers, a `Copy` struct, text held in place: its
        // bytes and its length) and owns no memory, so its bits copied are a second, independent
        // value, as `clone` would make; `slot` is NULL, which owns nothing, so overwriting it
        // leaks nothing. A `Value` is 24 bytes aligned to 8 (asserted above, when compiling), so
        // both are three aligned words; they are read as `MaybeUninit`, since a variant's padding is not
        // initialized.
        #[allow(unsafe_code)]
        unsafe {
            let words = std::ptr::read((self as *const Value).cast::<Words>());
            std::ptr::write((slot as *mut Value).cast::<Words>(), words);
        }
        true
    }

    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as f64 for numeric aggregation (INT, BIGINT, FLOAT, DOUBLE, DECIMAL rounded to
    /// the nearest double; TIMESTAMP as µs);
    /// `None` for NULL and non-numeric values.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::Long(v) => Some(v as f64),
            Value::Float(v) => Some(v as f64),
            Value::Double(v) => Some(v),
            Value::Timestamp(t) => Some(t.0 as f64),
            Value::Decimal(d) => Some(d.to_f64()),
            _ => None,
        }
    }

    /// The value as i64 (INT, BIGINT, TIMESTAMP as µs); `None` otherwise.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(v) => Some(v as i64),
            Value::Long(v) => Some(v),
            Value::Timestamp(t) => Some(t.0),
            _ => None,
        }
    }

    /// The timestamp, if this is one.
    pub fn as_timestamp(&self) -> Option<Timestamp> {
        match *self {
            Value::Timestamp(t) => Some(t),
            _ => None,
        }
    }

    /// The event time of a value in an event-time column: a TIMESTAMP itself; a window (the
    /// `window` column of an aggregation read by a chained one) its `window_time`, the end
    /// minus 1 µs, as Spark's `window(window, ...)` reads it (SPARK-40925); `None` otherwise.
    pub fn event_time(&self) -> Option<Timestamp> {
        match *self {
            Value::Timestamp(t) => Some(t),
            Value::Window { end, .. } => Some(end.saturating_sub(crate::time::Duration(1))),
            _ => None,
        }
    }

    /// The instant a watermark finalises a group key at: a TIMESTAMP key when the watermark
    /// reaches it, a window key (a chained aggregation grouped by the upstream's `window`) when
    /// the watermark reaches its end, as Spark compares `window.end` with the watermark for a
    /// window-typed event-time column; `None` otherwise.
    pub fn key_time(&self) -> Option<Timestamp> {
        match *self {
            Value::Timestamp(t) => Some(t),
            Value::Window { end, .. } => Some(end),
            _ => None,
        }
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A total order used by min / max and percentiles: NULL first, then by value. Doubles use
    /// IEEE total order (NaN largest, as Spark orders NaN above every number).
    pub fn total_cmp(&self, other: &Value) -> std::cmp::Ordering {
        use Value::*;
        use std::cmp::Ordering;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Less,
            (_, Null) => Ordering::Greater,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Long(a), Long(b)) => a.cmp(b),
            (Float(a), Float(b)) => spark_f64_cmp(*a as f64, *b as f64),
            (Double(a), Double(b)) => spark_f64_cmp(*a, *b),
            (Str(a), Str(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp_value(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Struct(_, a), Struct(_, b)) => cmp_fields(a, b),
            (Window { start: a, end: b }, Window { start: c, end: d }) => (a, b).cmp(&(c, d)),
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => spark_f64_cmp(x, y),
                _ => a.rank().cmp(&b.rank()),
            },
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Long(_) | Value::Float(_) | Value::Double(_) | Value::Decimal(_) => 2,
            Value::Str(_) => 3,
            Value::Timestamp(_) => 4,
            Value::Window { .. } => 5,
            Value::List(_) => 6,
            Value::Date(_) => 7,
            Value::Struct(..) => 8,
        }
    }
}

/// Structs order field by field, as Spark orders struct values.
fn cmp_fields(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    a.iter().zip(b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or_else(|| a.len().cmp(&b.len()))
}

/// Spark's order for doubles: -0.0 == 0.0, NaN == NaN and above every number.
fn spark_f64_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

impl PartialEq for Value {
    /// Grouping equality, as Spark groups: NULL equals NULL, NaN equals NaN, -0.0 equals 0.0,
    /// decimals by numeric value (`1.50` equals `1.5`).
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Long(a), Long(b)) => a == b,
            (Float(a), Float(b)) => norm_f64(*a as f64) == norm_f64(*b as f64),
            (Double(a), Double(b)) => norm_f64(*a) == norm_f64(*b),
            (Str(a), Str(b)) => a == b,
            (Timestamp(a), Timestamp(b)) => a == b,
            (Decimal(a), Decimal(b)) => a == b,
            (Date(a), Date(b)) => a == b,
            (Struct(s, a), Struct(t, b)) => s == t && a == b,
            (Window { start: a, end: b }, Window { start: c, end: d }) => a == c && b == d,
            (List(a), List(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

/// Bits of a double with NaN and -0.0 normalised, for hashing and grouping.
fn norm_f64(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => state.write_u8(0),
            Value::Bool(b) => state.write_u8(1 + *b as u8),
            Value::Int(v) => state.write_i64(*v as i64),
            Value::Long(v) => state.write_i64(*v),
            Value::Float(v) => state.write_u64(norm_f64(*v as f64)),
            Value::Double(v) => state.write_u64(norm_f64(*v)),
            Value::Str(s) => s.hash(state),
            Value::Timestamp(t) => state.write_i64(t.0),
            Value::Decimal(d) => d.hash(state),
            Value::Window { start, end } => {
                state.write_i64(start.0);
                state.write_i64(end.0);
            }
            Value::List(l) => l.hash(state),
            Value::Date(d) => {
                state.write_u8(7);
                state.write_i32(*d);
            }
            Value::Struct(_, fields) => fields.hash(state),
        }
    }
}

/// One decoded input record: a value per schema column, in schema order. Columns the query does
/// not need may be left NULL by the decoder (projection); a stateful processor's query needs
/// every column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Record {
    /// The values, one per schema column.
    pub values: Box<[Value]>,
}

impl Record {
    /// A record of these values.
    pub fn new(values: Vec<Value>) -> Record {
        Record { values: values.into_boxed_slice() }
    }

    /// The value of column `i`.
    ///
    /// # Panics
    /// When `i` is out of range (a bug: column indexes come from the validated spec).
    pub fn get(&self, i: usize) -> &Value {
        &self.values[i]
    }
}

/// The values of the partition-key columns of a record (`group_by`, `partition_by`, dedup
/// `columns`), in the order the query names them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default, PartialOrd, Ord)]
pub struct GroupKey(pub Box<[KeyValue]>);

/// A value usable as a key part: [`Value`] with a total order (so state can be sorted and
/// snapshots are deterministic).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyValue(pub Value);

impl PartialOrd for KeyValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyValue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl GroupKey {
    /// The key of `record` over the columns at `indexes`.
    pub fn of(record: &Record, indexes: &[usize]) -> GroupKey {
        GroupKey(indexes.iter().map(|&i| KeyValue(record.values[i].clone())).collect())
    }

    /// The key of `record` over the columns at `indexes` as an aggregation groups by it: a
    /// floating-point part is written as Spark's `NormalizeFloatingNumbers` makes every grouping
    /// key, -0.0 as 0.0 and any NaN as the one NaN (inside structs too), so a group first seen
    /// with -0.0 is written with 0.0, as Spark writes it. (Grouping equality already takes the
    /// two zeros as one key; only the value kept changes.)
    pub fn of_grouping(record: &Record, indexes: &[usize]) -> GroupKey {
        GroupKey(indexes.iter().map(|&i| KeyValue(normalized_float(&record.values[i]))).collect())
    }

    /// The key parts as values.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|k| &k.0)
    }
}

/// `v` with -0.0 as 0.0 and any NaN as [`f64::NAN`] / [`f32::NAN`], struct fields included
/// (Spark's `NormalizeFloatingNumbers`); other values as they are.
fn normalized_float(v: &Value) -> Value {
    match v {
        Value::Double(x) if x.is_nan() => Value::Double(f64::NAN),
        Value::Double(x) if *x == 0.0 => Value::Double(0.0),
        Value::Float(x) if x.is_nan() => Value::Float(f32::NAN),
        Value::Float(x) if *x == 0.0 => Value::Float(0.0),
        Value::Struct(names, fields) => Value::Struct(*names, fields.iter().map(normalized_float).collect()),
        other => other.clone(),
    }
}

/// The values of a STRUCT, one per field in order, shared (cloning a STRUCT copies no value).
/// Behind one thin pointer, so that the variant [`Value::Struct`] (its type beside the pointer)
/// takes 16 bytes, and fits beside the byte where a `Value` keeps its tag ([`Text`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fields(Arc<Box<[Value]>>);

impl std::ops::Deref for Fields {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.0
    }
}

impl From<Vec<Value>> for Fields {
    fn from(values: Vec<Value>) -> Fields {
        Fields(Arc::new(values.into_boxed_slice()))
    }
}

impl From<&[Value]> for Fields {
    fn from(values: &[Value]) -> Fields {
        Fields(Arc::new(values.into()))
    }
}

impl FromIterator<Value> for Fields {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> Fields {
        Fields(Arc::new(values.into_iter().collect()))
    }
}

/// Writes `new` into `slot`, calling the drop glue of the old value only when it owns memory
/// ([`Value::owns_memory`]): a recycled record's values and the spare slots computed columns go
/// to are mostly numbers, timestamps, short text or NULL: a store each, no call.
#[inline(always)]
pub(crate) fn overwrite(slot: &mut Value, new: Value) {
    // The variant is looked at before the write: the old value is then never copied out. NULL
    // (a spare slot) is tested first: one compare of the tag byte.
    if slot.is_null() || !slot.owns_memory() {
        std::mem::forget(std::mem::replace(slot, new));
    } else {
        *slot = new;
    }
}

/// One output row: values in the order of the query's output schema.
pub type Row = Vec<Value>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record holds its values inline: a larger `Value` (48 bytes with a 16-byte aligned
    /// `i128` in [`Decimal`], 32 with an 8-byte aligned one, 32 too when a variant does not fit
    /// before [`Text`]'s length byte, as `Struct` with its fields behind a fat pointer) makes
    /// every record, batch and state entry larger by as much.
    #[test]
    fn a_value_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
        assert_eq!(std::mem::align_of::<Value>(), 8);
    }

    /// A value that owns no memory is copied over a NULL slot and reads back equal (text held in
    /// place to its last byte, a DECIMAL, a window); shared text, a STRUCT and a list are not
    /// copied, nor is anything copied over a slot that is not NULL.
    #[test]
    fn copies_plain_values_over_null_only() {
        use crate::decimal::Decimal;
        let plain = [
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Long(i64::MIN),
            Value::Float(1.5),
            Value::Double(-0.0),
            Value::Timestamp(Timestamp(1_700_000_000_000_000)),
            Value::Decimal(Decimal { unscaled: -(10i128.pow(37)), scale: 38 }),
            Value::Date(19_000),
            Value::Window { start: Timestamp(10), end: Timestamp(20) },
            Value::Str("".into()),
            Value::Str("key-1".into()),
            Value::Str("é".repeat(11).as_str().into()),
            Value::Str("x".repeat(INLINE).as_str().into()),
        ];
        for v in &plain {
            let mut slot = Value::Null;
            assert!(v.copy_plain_over_null(&mut slot), "{v:?}");
            assert!(slot.total_cmp(v).is_eq() && std::mem::discriminant(&slot) == std::mem::discriminant(v), "{v:?}");
            let mut taken = Value::Long(1);
            assert!(!v.copy_plain_over_null(&mut taken), "{v:?} over a BIGINT");
            assert!(matches!(taken, Value::Long(1)));
        }
        let shared = Value::Str("y".repeat(INLINE + 1).as_str().into());
        let st =
            StructType::new(vec![crate::schema::Field { name: "a".into(), data_type: crate::schema::DataType::Long }]);
        let owning =
            [shared, Value::Struct(st, vec![Value::Long(1)].into()), Value::List(Arc::from(vec![Value::Int(1)]))];
        for v in &owning {
            let mut slot = Value::Null;
            assert!(!v.copy_plain_over_null(&mut slot), "{v:?}");
            assert!(slot.is_null());
        }
    }
}
