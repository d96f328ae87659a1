//! window (in progress)
