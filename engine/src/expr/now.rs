//! The processing time that `current_timestamp()` / `now()` read (SQL.md "time": "the engine's
//! processing time: the replay clock's under a replay clock").
//!
//! The runtime sets it on the thread that evaluates, right before it evaluates, with
//! [`set_processing_time`]: a partition actor to the batch's processing time (micro-batch, as
//! Spark gives every row of a batch its batch timestamp) or to the instant a record or a timer
//! is processed at (real-time); a source actor to the system clock when it runs its steps.
//! Compiled expressions do not carry the clock, so a thread-local keeps it: each actor runs
//! on its own thread and sets it before each evaluation, so no value leaks between them.
//! Where nothing set it (a unit test, a library user evaluating an expression by itself), the
//! system clock is read, as Spark reads the wall clock.

use std::cell::Cell;

use crate::time::Timestamp;

thread_local! {
    static PROCESSING_TIME: Cell<Option<Timestamp>> = const { Cell::new(None) };
}

/// Sets what `current_timestamp()` evaluates to on this thread until the next call (µs since
/// the epoch, UTC).
pub fn set_processing_time(now: Timestamp) {
    PROCESSING_TIME.with(|c| c.set(Some(now)));
}

/// What `current_timestamp()` evaluates to on this thread: the last [`set_processing_time`],
/// or the system clock when it was never called here.
pub fn processing_time() -> Timestamp {
    PROCESSING_TIME.with(Cell::get).unwrap_or_else(system_now)
}

fn system_now() -> Timestamp {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Timestamp(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
}
