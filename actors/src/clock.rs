//! The clock: the only way the runtime reads processing time (DESIGN.md "Clock is a trait").
//! The replay clock of PIPELINE.md is not a wall clock at all: its time comes from a column of the
//! records, and the source actor stamps each record with it (`eddy_engine::driver`).

use eddy_engine::Timestamp;

/// A source of processing time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current processing time (µs since the epoch).
    fn now(&self) -> Timestamp;

    /// Whether time advances by itself (a wall clock): partition actors then sleep until their
    /// operators' next timer. A replay clock advances only with the data.
    fn is_wall_clock(&self) -> bool;
}

/// The system clock (UTC wall time).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Timestamp(d.as_micros() as i64)
    }

    fn is_wall_clock(&self) -> bool {
        true
    }
}

/// The replay clock: processing time is the replay column of the records (PIPELINE.md). It has
/// no time of its own; `now` is never consulted for it (records carry their stamps).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplayClock;

impl Clock for ReplayClock {
    fn now(&self) -> Timestamp {
        Timestamp::MIN
    }

    fn is_wall_clock(&self) -> bool {
        false
    }
}

/// Converts a processing-time instant of the system clock into a monotonic deadline.
pub fn deadline_of(clock: &dyn Clock, at: Timestamp) -> std::time::Instant {
    let now = clock.now();
    let ahead = at.0.saturating_sub(now.0).max(0) as u64;
    std::time::Instant::now() + std::time::Duration::from_micros(ahead)
}
