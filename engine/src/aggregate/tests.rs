//! Tests of the aggregate functions over their public surface.
