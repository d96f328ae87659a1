//! Eddy benchmark harness (see the benchmark issue).
fn main() {}
