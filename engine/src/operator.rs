//! operator (in progress)
