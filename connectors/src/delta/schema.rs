//! The Arrow (and so Delta) schema of a Delta sink's rows, from Eddy's column types.
//!
//! | Eddy type | Arrow type | Delta type |
//! |---|---|---|
//! | STRING | Utf8 | string |
//! | BIGINT / INT | Int64 / Int32 | long / integer |
//! | DOUBLE / FLOAT | Float64 / Float32 | double / float |
//! | BOOLEAN | Boolean | boolean |
//! | TIMESTAMP (µs, UTC) | Timestamp(µs, "UTC") | timestamp (µs, adjusted to UTC) |
//! | DECIMAL(p, s) | Decimal128(p, s) | decimal(p, s) |
//! | DATE | Date32 | date |
//! | window | Struct{start, end: Timestamp(µs, "UTC")} | struct<start: timestamp, end: timestamp> |
//! | STRUCT | Struct of the mapped fields | struct |
//! | array (approx_percentile) | List of the mapped element | array |
//!
//! Every column is nullable (Spark writes a streaming query's columns as nullable too).

use std::sync::Arc;

use deltalake_core::arrow::datatypes::{DataType as ArrowType, Field as ArrowField, Fields, Schema, TimeUnit};
use eddy_engine::schema::{ArrayOf, DataType, Field};

/// The Arrow type of an Eddy column type (see the module's table).
pub fn arrow_type(t: &DataType) -> ArrowType {
    match t {
        DataType::String => ArrowType::Utf8,
        DataType::Long => ArrowType::Int64,
        DataType::Int => ArrowType::Int32,
        DataType::Double => ArrowType::Float64,
        DataType::Float => ArrowType::Float32,
        DataType::Boolean => ArrowType::Boolean,
        DataType::Timestamp => timestamp(),
        DataType::Decimal { precision, scale } => ArrowType::Decimal128(*precision, *scale as i8),
        DataType::Date => ArrowType::Date32,
        DataType::Window => ArrowType::Struct(Fields::from(vec![
            ArrowField::new("start", timestamp(), true),
            ArrowField::new("end", timestamp(), true),
        ])),
        DataType::Struct(s) => ArrowType::Struct(s.fields().iter().map(arrow_field).collect::<Vec<_>>().into()),
        DataType::Array(of) => {
            let item = match of {
                ArrayOf::Long => ArrowType::Int64,
                ArrayOf::Int => ArrowType::Int32,
                ArrayOf::Double => ArrowType::Float64,
                ArrayOf::Float => ArrowType::Float32,
                ArrayOf::Timestamp => timestamp(),
                ArrayOf::String => ArrowType::Utf8,
                ArrayOf::Boolean => ArrowType::Boolean,
            };
            ArrowType::List(Arc::new(ArrowField::new("element", item, true)))
        }
    }
}

/// Delta's `timestamp`: microseconds since the epoch, adjusted to UTC.
fn timestamp() -> ArrowType {
    ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn arrow_field(f: &Field) -> ArrowField {
    ArrowField::new(&f.name, arrow_type(&f.data_type), true)
}

/// The Arrow schema of rows with these columns, in order.
pub fn arrow_schema(columns: &[Field]) -> Schema {
    Schema::new(columns.iter().map(arrow_field).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_a_struct_of_two_utc_timestamps_and_decimals_keep_precision_and_scale() {
        let columns = vec![
            Field { name: "window".into(), data_type: DataType::Window },
            Field { name: "total".into(), data_type: DataType::Decimal { precision: 20, scale: 2 } },
            Field { name: "day".into(), data_type: DataType::Date },
        ];
        let schema = arrow_schema(&columns);
        let ArrowType::Struct(window) = schema.field(0).data_type() else { panic!("{schema:?}") };
        let names: Vec<&str> = window.iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["start", "end"]);
        assert_eq!(window[0].data_type(), &ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())));
        assert_eq!(schema.field(1).data_type(), &ArrowType::Decimal128(20, 2));
        assert_eq!(schema.field(2).data_type(), &ArrowType::Date32);
        assert!(schema.fields().iter().all(|f| f.is_nullable()));
    }
}
