//! Bytes of an [`AggState`] for snapshots: a tag byte, then the fields little-endian; sketches in
//! their own (DataSketches) binary format. The snapshot header (magic, version, checksum) is the
//! checkpoint store's business, not this module's.

use super::numeric::{DecimalSum, DoubleDouble, DoubleSum, LongSum, Moments};
use super::sketch::{DistinctSketch, QuantileSketch};
use super::{AggKind, AggState, AggregateError, AggregateFn};
use crate::schema::DataType;
use crate::time::Timestamp;
use crate::value::Value;

const COUNT: u8 = 1;
const LONG_SUM: u8 = 2;
const DOUBLE_SUM: u8 = 3;
const MOMENTS: u8 = 4;
const EXTREME: u8 = 5;
const DECIMAL_SUM: u8 = 9;
const DISTINCT: u8 = 6;
const QUANTILES: u8 = 7;
const USER: u8 = 8;

impl AggState {
    /// The state as bytes; [`AggregateFn::state_from_bytes`] of the same function reads them back.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        match self {
            AggState::Count(n) => {
                out.push(COUNT);
                out.extend_from_slice(&n.to_le_bytes());
            }
            AggState::LongSum(s) => {
                out.push(LONG_SUM);
                out.extend_from_slice(&s.n.to_le_bytes());
                out.extend_from_slice(&s.sum.to_le_bytes());
                out.extend_from_slice(&s.as_double.to_le_bytes());
            }
            AggState::DecimalSum(s) => {
                out.push(DECIMAL_SUM);
                out.extend_from_slice(&s.n.to_le_bytes());
                out.extend_from_slice(&s.sum.to_le_bytes());
            }
            AggState::DoubleSum(s) => {
                out.push(DOUBLE_SUM);
                for x in [s.n, s.nan, s.pos_inf, s.neg_inf] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                put_dd(&mut out, s.sum);
            }
            AggState::Moments(m) => {
                out.push(MOMENTS);
                out.extend_from_slice(&m.n.to_le_bytes());
                out.extend_from_slice(&m.non_finite.to_le_bytes());
                put_dd(&mut out, m.s1);
                put_dd(&mut out, m.s2);
            }
            AggState::Extreme(v) => {
                out.push(EXTREME);
                match v {
                    None => out.push(0),
                    Some(v) => {
                        out.push(1);
                        put_value(&mut out, v);
                    }
                }
            }
            AggState::Distinct(s) => {
                out.push(DISTINCT);
                out.extend_from_slice(&s.to_bytes());
            }
            AggState::Quantiles(s) => {
                out.push(QUANTILES);
                out.extend_from_slice(&s.to_bytes());
            }
            AggState::User(v) => {
                out.push(USER);
                put_value(&mut out, v);
            }
        }
        out
    }
}

impl AggregateFn {
    /// Reads a state written by [`AggState::to_bytes`] for this function.
    ///
    /// # Errors
    /// [`AggregateError::BadState`] when the bytes are truncated, have trailing bytes, are a state
    /// of another function, or hold a sketch of another size (the pipeline's `rsd` or `accuracy`
    /// changed since the snapshot).
    pub fn state_from_bytes(&self, bytes: &[u8]) -> Result<AggState, AggregateError> {
        let bad = |why: String| AggregateError::BadState {
            function: self.function_name().to_string(),
            len: bytes.len(),
            why,
        };
        let expected = match self.new_state() {
            AggState::Count(_) => COUNT,
            AggState::LongSum(_) => LONG_SUM,
            AggState::DoubleSum(_) => DOUBLE_SUM,
            AggState::DecimalSum(_) => DECIMAL_SUM,
            AggState::Moments(_) => MOMENTS,
            AggState::Extreme(_) => EXTREME,
            AggState::Distinct(_) => DISTINCT,
            AggState::Quantiles(_) => QUANTILES,
            AggState::User(_) => USER,
        };
        let (&tag, rest) = bytes.split_first().ok_or_else(|| bad("empty".to_string()))?;
        if tag != expected {
            return Err(bad(format!("state tag {tag}, expected {expected}")));
        }
        self.decode(tag, rest).map_err(bad)
    }

    fn decode(&self, tag: u8, rest: &[u8]) -> Result<AggState, String> {
        let mut r = Reader { bytes: rest };
        let state = match tag {
            COUNT => AggState::Count(r.i64()?),
            LONG_SUM => AggState::LongSum(LongSum { n: r.i64()?, sum: r.i128()?, as_double: r.f64()? }),
            DECIMAL_SUM => AggState::DecimalSum(DecimalSum { n: r.i64()?, sum: r.i128()? }),
            DOUBLE_SUM => {
                let (n, nan, pos_inf, neg_inf) = (r.i64()?, r.i64()?, r.i64()?, r.i64()?);
                AggState::DoubleSum(DoubleSum { n, sum: r.dd()?, nan, pos_inf, neg_inf })
            }
            MOMENTS => {
                let (n, non_finite) = (r.i64()?, r.i64()?);
                AggState::Moments(Moments { n, s1: r.dd()?, s2: r.dd()?, non_finite })
            }
            EXTREME => match r.u8()? {
                0 => AggState::Extreme(None),
                1 => AggState::Extreme(Some(r.value(0)?)),
                b => return Err(format!("extreme presence byte {b}")),
            },
            DISTINCT => {
                let AggKind::ApproxCountDistinct { rsd } = self.kind else {
                    return Err("not an approx_count_distinct".to_string());
                };
                AggState::Distinct(Box::new(DistinctSketch::from_bytes(self.hll_lg_k(rsd), r.take_rest())?))
            }
            QUANTILES => {
                let AggKind::ApproxPercentile { accuracy, .. } = self.kind else {
                    return Err("not an approx_percentile".to_string());
                };
                let floating = matches!(self.input_type, DataType::Float | DataType::Double);
                let k = self.kll_k(accuracy);
                AggState::Quantiles(Box::new(QuantileSketch::from_bytes(floating, k, r.take_rest())?))
            }
            _ => AggState::User(r.value(0)?),
        };
        if !r.bytes.is_empty() {
            return Err(format!("{} trailing bytes", r.bytes.len()));
        }
        Ok(state)
    }
}

fn put_dd(out: &mut Vec<u8>, d: DoubleDouble) {
    out.extend_from_slice(&d.hi.to_le_bytes());
    out.extend_from_slice(&d.lo.to_le_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.extend_from_slice(&[1, *b as u8]),
        Value::Int(x) => {
            out.push(2);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Long(x) => {
            out.push(3);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Float(x) => {
            out.push(4);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Double(x) => {
            out.push(5);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Str(s) => {
            out.push(6);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Timestamp(t) => {
            out.push(7);
            out.extend_from_slice(&t.0.to_le_bytes());
        }
        Value::Window { start, end } => {
            out.push(8);
            out.extend_from_slice(&start.0.to_le_bytes());
            out.extend_from_slice(&end.0.to_le_bytes());
        }
        Value::Decimal(d) => {
            out.push(10);
            out.extend_from_slice(&d.unscaled.to_le_bytes());
            out.push(d.scale);
        }
        Value::List(items) => {
            out.push(9);
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items.iter() {
                put_value(out, item);
            }
        }
        Value::Date(d) => {
            out.push(11);
            out.extend_from_slice(&d.to_le_bytes());
        }
        Value::Struct(ty, fields) => {
            // the type as its field list (struct type ids are per process)
            out.push(12);
            let ty = serde_json::to_string(ty).unwrap_or_default();
            out.extend_from_slice(&(ty.len() as u64).to_le_bytes());
            out.extend_from_slice(ty.as_bytes());
            out.extend_from_slice(&(fields.len() as u64).to_le_bytes());
            for item in fields.iter() {
                put_value(out, item);
            }
        }
    }
}

/// Nesting bound for lists inside a user state (so a corrupt snapshot cannot overflow the stack).
const MAX_DEPTH: usize = 64;

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err(format!("truncated: needed {n} more bytes, {} left", self.bytes.len()));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn take_rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn i64(&mut self) -> Result<i64, String> {
        self.array().map(i64::from_le_bytes)
    }

    fn i128(&mut self) -> Result<i128, String> {
        self.array().map(i128::from_le_bytes)
    }

    fn f64(&mut self) -> Result<f64, String> {
        self.array().map(f64::from_le_bytes)
    }

    fn dd(&mut self) -> Result<DoubleDouble, String> {
        Ok(DoubleDouble { hi: self.f64()?, lo: self.f64()? })
    }

    fn len(&mut self) -> Result<usize, String> {
        let n = u64::from_le_bytes(self.array()?);
        // A length cannot exceed the bytes left (every element takes at least one byte).
        if n > self.bytes.len() as u64 {
            return Err(format!("length {n} exceeds the {} bytes left", self.bytes.len()));
        }
        Ok(n as usize)
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nested deeper than {MAX_DEPTH}"));
        }
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Bool(self.u8()? != 0),
            2 => Value::Int(i32::from_le_bytes(self.array()?)),
            3 => Value::Long(self.i64()?),
            4 => Value::Float(f32::from_le_bytes(self.array()?)),
            5 => Value::Double(self.f64()?),
            6 => {
                let n = self.len()?;
                let s = std::str::from_utf8(self.take(n)?).map_err(|e| e.to_string())?;
                Value::Str(s.into())
            }
            7 => Value::Timestamp(Timestamp(self.i64()?)),
            10 => Value::Decimal(crate::decimal::Decimal::new(self.i128()?, self.u8()?)),
            8 => Value::Window { start: Timestamp(self.i64()?), end: Timestamp(self.i64()?) },
            9 => {
                let n = self.len()?;
                let items = (0..n).map(|_| self.value(depth + 1)).collect::<Result<Vec<_>, _>>()?;
                Value::List(items.into())
            }
            11 => Value::Date(i32::from_le_bytes(self.array()?)),
            12 => {
                let n = self.len()?;
                let ty: crate::schema::StructType =
                    serde_json::from_slice(self.take(n)?).map_err(|e| format!("a struct type: {e}"))?;
                let n = self.len()?;
                let items = (0..n).map(|_| self.value(depth + 1)).collect::<Result<Vec<_>, _>>()?;
                Value::Struct(ty, items.into())
            }
            t => return Err(format!("unknown value tag {t}")),
        })
    }
}

#[cfg(test)]
mod value_tests {
    use super::*;
    use crate::schema::{Field, StructType};

    #[test]
    fn dates_and_structs_in_a_state_read_back_as_written() {
        let ty = StructType::new(vec![
            Field { name: "a".into(), data_type: DataType::Int },
            Field { name: "n".into(), data_type: DataType::String },
            Field { name: "d".into(), data_type: DataType::Date },
        ]);
        let v = Value::List(
            vec![Value::Date(-1), Value::Struct(ty, vec![Value::Int(1), Value::Null, Value::Date(19_737)].into())]
                .into(),
        );
        let mut out = Vec::new();
        put_value(&mut out, &v);
        let mut r = Reader { bytes: &out };
        assert_eq!(r.value(0), Ok(v));
        assert!(r.bytes.is_empty());
    }
}
