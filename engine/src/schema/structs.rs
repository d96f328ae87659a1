//! STRUCT types (SQL.md "Types"): the field list of a `struct(...)` / `named_struct(...)`
//! value, interned so that [`DataType`] stays `Copy`.
//!
//! A [`StructType`] is a small id into a process-wide table of field lists. Equal field lists
//! (names and types, in order) get the same id, so `==` on ids is `==` on the types, as
//! Spark compares struct types. The table only grows: a pipeline names a handful of struct
//! types, all known when its expressions are bound.

use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{DataType, Field};

/// A STRUCT type: its fields, in order (interned; see the module doc).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StructType(u32);

#[derive(Default)]
struct Table {
    ids: HashMap<&'static [Field], u32>,
    fields: Vec<&'static [Field]>,
}

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(RwLock::default)
}

impl StructType {
    /// The struct type of these fields (names as given; Spark keeps duplicate names in a
    /// struct, and so does this type: field access takes the first).
    pub fn new(fields: Vec<Field>) -> StructType {
        if let Some(&id) = table().read().unwrap_or_else(|e| e.into_inner()).ids.get(fields.as_slice()) {
            return StructType(id);
        }
        let mut t = table().write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = t.ids.get(fields.as_slice()) {
            return StructType(id);
        }
        // interned for the life of the process (a pipeline has few struct types)
        let leaked: &'static [Field] = Box::leak(fields.into_boxed_slice());
        let id = t.fields.len() as u32;
        t.fields.push(leaked);
        t.ids.insert(leaked, id);
        StructType(id)
    }

    /// The fields, in order.
    pub fn fields(self) -> &'static [Field] {
        // ids are only made by `new`, so the index exists
        table().read().unwrap_or_else(|e| e.into_inner()).fields.get(self.0 as usize).copied().unwrap_or(&[])
    }

    /// The position and type of the field `name`: the exact name, else the first equal to it
    /// ignoring case (Spark's default `spark.sql.caseSensitive = false`).
    pub fn field(self, name: &str) -> Option<(usize, DataType)> {
        let fields = self.fields();
        let i = fields
            .iter()
            .position(|f| f.name == name)
            .or_else(|| fields.iter().position(|f| f.name.eq_ignore_ascii_case(name)))?;
        Some((i, fields[i].data_type))
    }
}

impl fmt::Debug for StructType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for StructType {
    /// As Spark's SQL type text: `STRUCT<a: INT, b: STRING>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("STRUCT<")?;
        for (i, fl) in self.fields().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}: {}", fl.name, fl.data_type)?;
        }
        f.write_str(">")
    }
}

impl Serialize for StructType {
    /// As its field list (ids are per process).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.fields().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StructType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StructType, D::Error> {
        Vec::<Field>::deserialize(d).map(StructType::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, data_type: DataType) -> Field {
        Field { name: name.into(), data_type }
    }

    #[test]
    fn equal_field_lists_are_one_struct_type() {
        let a = StructType::new(vec![f("a", DataType::Int), f("b", DataType::String)]);
        let b = StructType::new(vec![f("a", DataType::Int), f("b", DataType::String)]);
        let c = StructType::new(vec![f("b", DataType::String), f("a", DataType::Int)]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.to_string(), "STRUCT<a: INT, b: STRING>");
        assert_eq!(a.field("B"), Some((1, DataType::String)));
        assert_eq!(a.field("z"), None);
        let json = serde_json::to_string(&DataType::Struct(a)).unwrap_or_default();
        let back: DataType = serde_json::from_str(&json).unwrap_or(DataType::Int);
        assert_eq!(back, DataType::Struct(a));
    }
}
