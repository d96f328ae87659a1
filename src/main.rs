//! The `eddy` command (in progress).
fn main() {}
